import Glibc
import MediaRouteIPC
import Synchronization

/// The app identifiers connected now, one connection each. Route-level data and sessions are
/// addressed by identifier, so a second connection under a taken one could read what the device
/// sends the first: it is refused instead, naming the process that holds the identifier.
final class ConnectedApps: Sendable {
    private let holders = Mutex<[String: pid_t]>([:])

    func claim(_ identifier: String, pid: pid_t) throws(RPCError) {
        let holder: pid_t? = holders.withLock { holders in
            if let holder = holders[identifier] { return holder }
            holders[identifier] = pid
            return nil
        }
        if let holder {
            throw RPCError(.roleRejected, "app \(identifier) is already connected (pid \(holder)); an app identifier takes one connection at a time, so that no program can read another's data")
        }
    }

    func release(_ identifier: String) {
        _ = holders.withLock { $0.removeValue(forKey: identifier) }
    }
}
