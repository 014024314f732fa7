import MediaRouteWire

/// What `mediaroute drivers` shows about one driver.
public struct DriverStatus: Sendable, Hashable {
    public enum State: Sendable, Hashable {
        case stopped
        case starting
        case running
        case restarting(after: Duration)
        /// The restart budget is spent, or the driver lied about its identity; `enable` starts it again.
        case failed(String)
        case disabled
        /// The daemon's configuration file says `enabled: false` for it.
        case disabledByConfiguration
        /// The manifest is wrong, or the driver names another protocol than its manifest: not
        /// started (again) until the manifest changes or `enable`.
        case refused(String)
    }

    public let protocolID: String
    public let displayName: String
    public let manifestPath: String
    public let state: State
    public let pid: Int32?
    public let restarts: Int
    public let uptime: Duration?
    public let lastExit: String?
    public let deviceCount: Int
    /// Why discovery last failed, as the driver said.
    public let lastDiscoveryError: String?

    /// The wire form (`drivers.list`, `status`).
    package var report: DriverReport {
        DriverReport(protocol: protocolID, displayName: displayName, manifest: manifestPath, state: state.description, pid: pid, restarts: restarts,
                     uptimeSeconds: uptime.map { Int($0.components.seconds) }, lastExit: lastExit, devices: deviceCount, lastDiscoveryError: lastDiscoveryError)
    }
}

extension DriverStatus.State: CustomStringConvertible {
    public var description: String {
        switch self {
        case .stopped: "stopped"
        case .starting: "starting"
        case .running: "running"
        case .restarting(let after): "restarting in \(after.milliseconds) ms"
        case .failed(let why): "failed: \(why)"
        case .disabled: "disabled"
        case .disabledByConfiguration: "disabled in the configuration file"
        case .refused(let why): "refused: \(why)"
        }
    }
}
