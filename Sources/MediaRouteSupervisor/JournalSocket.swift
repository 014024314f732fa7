import Glibc

/// Where journald takes entries in its native protocol, and a socket to send them there.
public final class JournalSocket: Sendable {
    /// Where journald listens for native entries.
    public static let standardPath = "/run/systemd/journal/socket"
    /// Overrides `standardPath`, for the tests alone (a socket the test owns stands in for journald).
    public static let pathOverrideVariable = "MEDIAROUTE_JOURNAL_SOCKET"

    public let path: String
    private let sender: UnixDatagramSender

    /// `$MEDIAROUTE_JOURNAL_SOCKET`, else `standardPath`.
    public static var configuredPath: String {
        getenv(pathOverrideVariable).map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? standardPath
    }

    /// A socket to `configuredPath`, when a socket exists there.
    public static func fromEnvironment() -> JournalSocket? {
        let path = configuredPath
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFSOCK else { return nil }
        return JournalSocket(path: path)
    }

    public init?(path: String) {
        // Room for long entries, as libsystemd asks.
        guard path.hasPrefix("/"), let sender = UnixDatagramSender(address: Array(path.utf8), sendBuffer: 8 << 20) else { return nil }
        self.path = path
        self.sender = sender
    }

    /// Sends one entry: nil when sent, else the errno.
    public func send(_ entry: JournalEntry) -> Int32? { sender.send(entry.datagram) }
}
