import Glibc

/// Tells the service manager (systemd) how the daemon is doing: `READY=1`, `STATUS=...`,
/// `WATCHDOG=1`, `STOPPING=1`, each a datagram to `$NOTIFY_SOCKET` (sd_notify(3)). Written here
/// rather than linked from libsystemd: the protocol is one datagram, and the daemon then needs no
/// library beyond those its drivers need, where it runs without systemd too.
///
/// `$NOTIFY_SOCKET` is a filesystem path, or `@name` for the abstract namespace.
public final class ServiceNotifier: Sendable {
    private let sender: UnixDatagramSender

    /// A notifier for `$NOTIFY_SOCKET`, or nil when no service manager waits for the daemon. Unless
    /// `keepingEnvironment`, `NOTIFY_SOCKET` is then taken out of the environment, as sd_notify's
    /// `unset_environment` does, so that drivers started later never speak for the daemon
    /// (systemd would ignore them anyway with `NotifyAccess=main`).
    public static func fromEnvironment(keepingEnvironment: Bool = false) throws(ServiceNotifierError) -> ServiceNotifier? {
        guard let value = getenv("NOTIFY_SOCKET").map({ String(cString: $0) }), !value.isEmpty else { return nil }
        if !keepingEnvironment { unsetenv("NOTIFY_SOCKET") }
        return try ServiceNotifier(socket: value)
    }

    /// A notifier for the socket named as in `$NOTIFY_SOCKET`.
    public init(socket: String) throws(ServiceNotifierError) {
        var address = Array(socket.utf8)
        if address.first == UInt8(ascii: "@") {
            address[0] = 0
        } else if address.first != UInt8(ascii: "/") {
            throw ServiceNotifierError("NOTIFY_SOCKET is \"\(socket)\", neither an absolute path nor an abstract name (@name): not notifying the service manager")
        }
        guard let sender = UnixDatagramSender(address: address) else {
            throw ServiceNotifierError("cannot notify the service manager at NOTIFY_SOCKET \"\(socket)\": the name is longer than a Unix socket address may be (107 bytes), or no socket could be made")
        }
        self.sender = sender
    }

    /// Sends `state` (lines of `KEY=value`) in one datagram; false if it could not be sent.
    @discardableResult
    public func send(_ state: String) -> Bool { sender.send(Array(state.utf8)) == nil }
}

/// Why the service manager cannot be notified, as a sentence.
public struct ServiceNotifierError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
