/// Timeouts one layer gives (the configuration's defaults, a manifest, the configuration's
/// override for one driver); what a layer leaves nil comes from the layer below it.
public struct TimeoutSettings: Sendable, Hashable {
    public var request: Duration?
    public var heartbeatInterval: Duration?
    public var heartbeatTimeout: Duration?
    public var idleExit: Duration?

    public init(request: Duration? = nil, heartbeatInterval: Duration? = nil, heartbeatTimeout: Duration? = nil, idleExit: Duration? = nil) {
        self.request = request
        self.heartbeatInterval = heartbeatInterval
        self.heartbeatTimeout = heartbeatTimeout
        self.idleExit = idleExit
    }

    /// `timeouts` with what this layer gives put over them.
    public func applied(to timeouts: DriverManifest.Timeouts) -> DriverManifest.Timeouts {
        var timeouts = timeouts
        if let request { timeouts.request = request }
        if let heartbeatInterval { timeouts.heartbeatInterval = heartbeatInterval }
        if let heartbeatTimeout { timeouts.heartbeatTimeout = heartbeatTimeout }
        if let idleExit { timeouts.idleExit = idleExit }
        return timeouts
    }
}
