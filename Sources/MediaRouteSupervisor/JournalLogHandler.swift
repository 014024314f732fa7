import Glibc
import Logging

/// A swift-log handler for a daemon run by systemd, in one of journald's two forms:
/// - `.stream`: lines on stderr (which `JOURNAL_STREAM` says is journald's) with `<N>` syslog
///   priority prefixes, every line of a message prefixed, metadata after the message;
/// - `.native`: one datagram per entry to journald's socket, with `PRIORITY`, `MESSAGE`,
///   `SYSLOG_IDENTIFIER`, the source location, and every metadata key as a field of its own
///   (`driver` as `MEDIAROUTE_DRIVER`, `device`, `route`, `session` alike), which
///   `journalctl MEDIAROUTE_DRIVER=org.mediaroute.dlna` selects. An entry journald does not take
///   (it is down, or the entry too large) goes to stderr as a `.stream` line instead.
public struct JournalLogHandler: LogHandler {
    public enum Output: Sendable {
        case stream
        case native(JournalSocket)
    }

    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    public let label: String
    public let output: Output
    /// `SYSLOG_IDENTIFIER`: what journalctl shows before each message, and `-t` selects.
    public let identifier: String

    /// The largest `MESSAGE` sent whole; a longer one is cut there (journald's own line limit is 48 KiB).
    public static let messageLimit = 48 * 1024

    public init(label: String, output: Output, identifier: String = "mediarouted") {
        self.label = label
        self.output = output
        self.identifier = identifier
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let own = event.metadata { merged.merge(own) { _, new in new } }
        var message = event.message.description
        if message.utf8.count > Self.messageLimit {
            message = String(decoding: message.utf8.prefix(Self.messageLimit), as: UTF8.self) + " [cut: \(message.utf8.count) bytes]"
        }
        if case .native(let socket) = output {
            var entry = JournalEntry()
            entry.append("MESSAGE", message)
            entry.append("PRIORITY", String(JournalEntry.priority(of: event.level)))
            entry.append("SYSLOG_IDENTIFIER", identifier)
            entry.append("CODE_FILE", event.file)
            entry.append("CODE_LINE", String(event.line))
            entry.append("CODE_FUNC", event.function)
            for key in merged.keys.sorted() { entry.append(JournalEntry.fieldName(forMetadataKey: key), "\(merged[key]!)") }
            if socket.send(entry) == nil { return }
        }
        writeStreamLines(level: event.level, message: message, metadata: merged)
    }

    /// `<N>message key=value ...`, each line of the message with its own prefix (journald reads a
    /// stream line by line), in one write.
    private func writeStreamLines(level: Logger.Level, message: String, metadata: Logger.Metadata) {
        let prefix = "<\(JournalEntry.priority(of: level))>"
        let suffix = metadata.isEmpty ? "" : " " + metadata.keys.sorted().map { "\($0)=\(metadata[$0]!)" }.joined(separator: " ")
        let lines = message.split(separator: "\n", omittingEmptySubsequences: false)
        var text = lines.map { prefix + $0 }.joined(separator: "\n") + suffix + "\n"
        text.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(STDERR_FILENO, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { return }
                offset += written
            }
        }
    }
}
