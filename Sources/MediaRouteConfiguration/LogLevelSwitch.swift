import Logging
import Synchronization

/// The daemon's log level, changed while it runs (SIGHUP with a new `logLevel`). Every logger
/// made through `LevelSwitchedLogHandler` follows it.
public final class LogLevelSwitch: Sendable {
    private let current: Mutex<Logger.Level>

    public init(_ level: Logger.Level) { current = Mutex(level) }

    public var level: Logger.Level {
        get { current.withLock { $0 } }
        set { current.withLock { $0 = newValue } }
    }
}
