import Logging

/// A log handler whose level is the daemon's `LogLevelSwitch` (unless set on the logger itself),
/// passing what it lets through to the handler it wraps (stderr, the journal).
public struct LevelSwitchedLogHandler: LogHandler {
    private var wrapped: any LogHandler
    private let levelSwitch: LogLevelSwitch
    /// Set on this logger alone (`logger.logLevel = ...`): wins over the switch.
    private var ownLevel: Logger.Level?

    public init(_ wrapped: any LogHandler, levelSwitch: LogLevelSwitch) {
        self.wrapped = wrapped
        self.wrapped.logLevel = .trace
        self.levelSwitch = levelSwitch
    }

    public var logLevel: Logger.Level {
        get { ownLevel ?? levelSwitch.level }
        set { ownLevel = newValue }
    }

    public var metadata: Logger.Metadata {
        get { wrapped.metadata }
        set { wrapped.metadata = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { wrapped[metadataKey: key] }
        set { wrapped[metadataKey: key] = newValue }
    }

    public func log(event: LogEvent) { wrapped.log(event: event) }
}
