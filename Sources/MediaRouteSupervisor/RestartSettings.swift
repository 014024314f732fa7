/// Restart settings one layer gives (the configuration's defaults, a manifest, the configuration's
/// override for one driver); what a layer leaves nil comes from the layer below it.
public struct RestartSettings: Sendable, Hashable {
    public var intensity: Int?
    public var period: Duration?
    public var initialBackoff: Duration?
    public var maximumBackoff: Duration?

    public init(intensity: Int? = nil, period: Duration? = nil, initialBackoff: Duration? = nil, maximumBackoff: Duration? = nil) {
        self.intensity = intensity
        self.period = period
        self.initialBackoff = initialBackoff
        self.maximumBackoff = maximumBackoff
    }

    /// `policy` with what this layer gives put over it.
    public func applied(to policy: RestartPolicy) -> RestartPolicy {
        var policy = policy
        if let intensity { policy.intensity = intensity }
        if let period { policy.period = period }
        if let initialBackoff { policy.initialBackoff = initialBackoff }
        if let maximumBackoff { policy.maximumBackoff = maximumBackoff }
        return policy
    }
}
