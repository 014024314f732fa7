import Glibc
import Logging

/// Where the daemon's log goes, chosen once at start.
public enum LogOutput: Sendable {
    /// Plain lines on stderr, as swift-log's `StreamLogHandler` writes them (with a time).
    case standardError
    /// journald's stream on stderr: `<N>` priority prefixes (`JournalLogHandler.Output.stream`).
    case journalStream
    /// journald's native protocol, with structured fields.
    case journal(JournalSocket)

    /// The native protocol when `nativeJournal` asks for it and journald's socket exists (systemd
    /// suggests exactly this upgrade to a service whose stderr is the journal); else `<N>` prefixes
    /// when `$JOURNAL_STREAM` names the device and inode stderr is; else plain stderr.
    public static func choose(nativeJournal: Bool) -> LogOutput {
        if nativeJournal, let socket = JournalSocket.fromEnvironment() { return .journal(socket) }
        return standardErrorIsJournal ? .journalStream : .standardError
    }

    /// `$JOURNAL_STREAM` is `DEVICE:INODE` of the stream systemd connected stderr to; a stderr
    /// redirected since (by a shell, say) has another, and is not the journal.
    public static var standardErrorIsJournal: Bool {
        guard let value = getenv("JOURNAL_STREAM").map({ String(cString: $0) }) else { return false }
        let parts = value.split(separator: ":")
        var info = stat()
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]), fstat(STDERR_FILENO, &info) == 0 else { return false }
        return UInt64(info.st_dev) == device && UInt64(info.st_ino) == inode
    }

    /// Entries go to journald's socket.
    public var isNative: Bool { if case .journal = self { true } else { false } }

    /// A handler writing here, at `level`.
    public func handler(label: String, level: Logger.Level) -> any LogHandler {
        var handler: any LogHandler = switch self {
        case .standardError: StreamLogHandler.standardError(label: label)
        case .journalStream: JournalLogHandler(label: label, output: .stream)
        case .journal(let socket): JournalLogHandler(label: label, output: .native(socket))
        }
        handler.logLevel = level
        return handler
    }
}
