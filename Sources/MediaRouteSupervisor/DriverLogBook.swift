import Logging
import MediaRouteWire
import Synchronization

/// The last lines each driver wrote to its standard error, kept per protocol across its restarts,
/// for `drivers.log`: a driver says in its log why it does not list a device it heard of, and
/// `mediaroute doctor` reads it there. Bounded: `linesPerDriver` lines of at most `lineLength`
/// characters each.
final class DriverLogBook: Sendable {
    static let linesPerDriver = 200
    static let lineLength = 1000

    private struct Entry {
        let read: ContinuousClock.Instant
        let text: String
    }

    private let kept = Mutex<[String: [Entry]]>([:])

    init() {}

    func record(_ protocolID: String, _ line: String) {
        let entry = Entry(read: .now, text: String(line.prefix(Self.lineLength)))
        kept.withLock { kept in
            kept[protocolID, default: []].append(entry)
            if let count = kept[protocolID]?.count, count > Self.linesPerDriver { kept[protocolID]?.removeFirst(count - Self.linesPerDriver) }
        }
    }

    /// One driver's lines, or every driver's (by protocol), oldest first within each.
    func lines(of protocolID: String?) -> [DriverLogLine] {
        let now = ContinuousClock.now
        return kept.withLock { kept in
            kept.keys.sorted().filter { protocolID == nil || $0 == protocolID }.flatMap { id in
                (kept[id] ?? []).map { DriverLogLine(protocol: id, secondsAgo: Int((now - $0.read).components.seconds), text: $0.text) }
            }
        }
    }

    /// `logger`, which also keeps here what is logged through it for `protocolID` (a driver's
    /// stderr lines, prefixed `[protocolID] ` in the log, are kept without the prefix).
    func logger(for protocolID: String, forwardingTo logger: Logger) -> Logger {
        var keeping = logger
        keeping.handler = MultiplexLogHandler([logger.handler, Keeper(book: self, protocolID: protocolID)])
        return keeping
    }

    private struct Keeper: LogHandler {
        let book: DriverLogBook
        let protocolID: String
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let message = event.message.description
            let prefix = "[\(protocolID)] "
            book.record(protocolID, message.hasPrefix(prefix) ? String(message.dropFirst(prefix.count)) : message)
        }
    }
}
