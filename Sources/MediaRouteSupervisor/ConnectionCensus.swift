import Glibc
import Synchronization

/// How many connections each user holds open to the control socket, against a limit per user.
final class ConnectionCensus: Sendable {
    let limit: Int
    private let open = Mutex<[uid_t: Int]>([:])

    init(limit: Int) { self.limit = limit }

    /// Counts a new connection of `uid`, unless that user is at the limit.
    func admit(_ uid: uid_t) -> Bool {
        open.withLock { counts in
            let count = counts[uid, default: 0]
            guard count < limit else { return false }
            counts[uid] = count + 1
            return true
        }
    }

    func leave(_ uid: uid_t) {
        open.withLock { counts in
            let count = counts[uid, default: 1] - 1
            counts[uid] = count > 0 ? count : nil
        }
    }
}
