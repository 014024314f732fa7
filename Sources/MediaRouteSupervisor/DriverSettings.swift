/// What the daemon's configuration says about drivers. A driver's restart policy and timeouts are
/// taken in this order, each layer over the one before: the built-in defaults, `restart` and
/// `timeouts` here (for every driver), the driver's manifest, then its `overrides` entry here.
public struct DriverSettings: Sendable, Hashable {
    /// Defaults for every driver, under what its manifest says.
    public var restart: RestartSettings
    public var timeouts: TimeoutSettings
    /// By protocol id (an extension's identifier), over what the manifest says.
    public var overrides: [String: DriverOverride]

    public init(restart: RestartSettings = RestartSettings(), timeouts: TimeoutSettings = TimeoutSettings(), overrides: [String: DriverOverride] = [:]) {
        self.restart = restart
        self.timeouts = timeouts
        self.overrides = overrides
    }

    /// True when the configuration keeps the driver stopped.
    public func isDisabled(_ protocolID: String) -> Bool { overrides[protocolID]?.enabled == false }
}
