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
        if driver.state.hasPrefix("failed") {
            return Diagnosis("drivers", driver.protocol, .problem, "\(name) is \(driver.state)\(exit)",
                             fix: "it stays down until `mediaroute enable \(driver.protocol)` (after mending what made it crash: see its last exit and mediarouted's log)")
        }
        if driver.state.hasPrefix("refused") {
            return Diagnosis("drivers", driver.protocol, .problem, "\(name) is \(driver.state)",
                             fix: "mend its manifest \(driver.manifest) (or the driver), then `mediaroute enable \(driver.protocol)` or SIGHUP to mediarouted")
        }
        if driver.state == "disabled" {
            return Diagnosis("drivers", driver.protocol, .warning, "\(name) is disabled by the operator: its devices are not listed",
                             fix: "`mediaroute enable \(driver.protocol)` if its devices should be")
        }
        if driver.state.hasPrefix("restarting") {
            return Diagnosis("drivers", driver.protocol, .warning, "\(name) is \(driver.state) after it ended\(exit)\(discovery)",
                             fix: "if it keeps restarting, its budget runs out and it is marked failed: see mediarouted's log for its last words")
        }
        if let error = driver.lastDiscoveryError {
            // The supervisor keeps the last failure, not when it passed: the device count says whether it did.
            return Diagnosis("drivers", driver.protocol, .warning,
                             "\(name) is \(driver.state) and knows \(driver.devices) device\(driver.devices == 1 ? "" : "s"); it reported a discovery failure (it may have recovered since): \(error)",
                             fix: "mend what the sentence names (the checks below look at Avahi, multicast and the firewall); the driver tries again by itself")
        }
        let devices = driver.devices == 1 ? "1 device" : "\(driver.devices) devices"
        let state = driver.state == "stopped" ? "stopped (started when a picker opens)" : driver.state
        return Diagnosis("drivers", driver.protocol, .ok, "\(name) is \(state), \(devices) known\(exit)")
    }
}
