/// What the daemon's configuration says about one driver (by protocol id), over its manifest:
/// restart settings and timeouts, variables added to its environment, and whether it runs at all.
public struct DriverOverride: Sendable, Hashable {
    /// False keeps the driver stopped whatever its manifest says, until the configuration changes.
    public var enabled: Bool
    public var restart: RestartSettings
    public var timeouts: TimeoutSettings
    /// Added to the manifest's environment; a variable named in both takes this value.
    public var environment: [String: String]

    public init(enabled: Bool = true, restart: RestartSettings = RestartSettings(), timeouts: TimeoutSettings = TimeoutSettings(),
                environment: [String: String] = [:]) {
        self.enabled = enabled
        self.restart = restart
        self.timeouts = timeouts
        self.environment = environment
    }
}
