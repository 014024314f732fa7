import MediaRouteWire

/// Each driver's state, as `drivers.list` gives it: failed, refused or disabled with the reason,
/// its last exit, and its last discovery error.
struct DriversCheck {
    let drivers: [DriverReport]

    func run() -> [Diagnosis] {
        guard !drivers.isEmpty else {
            return [Diagnosis("drivers", "drivers", .problem, "mediarouted has no driver: it found no manifest in its drivers directories",
                              fix: "start it with `--drivers-dir DIR` naming the directory that holds the drivers' *.json manifests")]
        }
        return drivers.map(diagnose)
    }

    func diagnose(_ driver: DriverReport) -> Diagnosis {
        let name = "\(driver.protocol) (\(driver.displayName))"
        let exit = driver.lastExit.map { "; it last ended: \($0)" } ?? ""
        let discovery = driver.lastDiscoveryError.map { "; its last discovery failed: \($0)" } ?? ""
        switch DriverState(driver.state) {
        case .failed:
            return Diagnosis("drivers", driver.protocol, .problem, "\(name) is \(driver.state)\(exit)",
                             fix: "it stays down until `mediaroute enable \(driver.protocol)` (after mending what made it crash: see its last exit and mediarouted's log)")
        case .refused:
            return Diagnosis("drivers", driver.protocol, .problem, "\(name) is \(driver.state)",
                             fix: "mend its manifest \(driver.manifest) (or the driver), then `mediaroute enable \(driver.protocol)` or SIGHUP to mediarouted")
        case .disabled:
            return Diagnosis("drivers", driver.protocol, .warning, "\(name) is disabled by the operator: its devices are not listed",
                             fix: "`mediaroute enable \(driver.protocol)` if its devices should be")
        case .disabledByConfiguration:
            // `mediaroute enable` is refused for it: only the file (and a reload) brings it back.
            return Diagnosis("drivers", driver.protocol, .warning, "\(name) is disabled in the configuration file (`enabled: false`): its devices are not listed",
                             fix: DriverState.enableInConfiguration(driver.protocol) + " if its devices should be")
        case .restarting:
            return Diagnosis("drivers", driver.protocol, .warning, "\(name) is \(driver.state) after it ended\(exit)\(discovery)",
                             fix: "if it keeps restarting, its budget runs out and it is marked failed: see mediarouted's log for its last words")
        case .unknown:
            return Diagnosis("drivers", driver.protocol, .warning, "\(name) is \(driver.state): a state this mediaroute does not know\(exit)\(discovery)",
                             fix: "run a mediaroute as new as mediarouted, whose doctor knows what that state means")
        case .stopped, .starting, .running:
            break
        }
        if let error = driver.lastDiscoveryError {
            // The supervisor keeps the last failure, not when it passed: the device count says whether it did.
            return Diagnosis("drivers", driver.protocol, .warning,
                             "\(name) is \(driver.state) and knows \(driver.devices) device\(driver.devices == 1 ? "" : "s"); it reported a discovery failure (it may have recovered since): \(error)",
                             fix: "mend what the sentence names (the checks below look at Avahi, multicast and the firewall); the driver tries again by itself")
        }
        let devices = driver.devices == 1 ? "1 device" : "\(driver.devices) devices"
        let state = DriverState(driver.state) == .stopped ? "stopped (started when a picker opens)" : driver.state
        return Diagnosis("drivers", driver.protocol, .ok, "\(name) is \(state), \(devices) known\(exit)")
    }
}

/// A driver's state as `drivers.list` words it (the supervisor's `DriverStatus.State`, which the
/// wire carries as its text only), read back into its cases in this one place, by the exact words
/// each case is printed with.
enum DriverState: Equatable {
    case stopped, starting, running, restarting
    case failed, disabled, disabledByConfiguration, refused
    /// A state this CLI does not know (a newer daemon's).
    case unknown

    init(_ text: String) {
        switch text {
        case "stopped": self = .stopped
        case "starting": self = .starting
        case "running": self = .running
        case "disabled": self = .disabled
        case "disabled in the configuration file": self = .disabledByConfiguration
        case _ where text.hasPrefix("restarting in "): self = .restarting
        case _ where text.hasPrefix("failed: ") || text == "failed": self = .failed
        case _ where text.hasPrefix("refused: ") || text == "refused": self = .refused
        default: self = .unknown
        }
    }

    /// What brings back a driver the configuration file disables.
    static func enableInConfiguration(_ protocolID: String) -> String {
        "set `enabled: true` for \(protocolID) in the configuration file (or remove its `enabled: false`), then `systemctl reload mediarouted` or SIGHUP to mediarouted"
    }
}
