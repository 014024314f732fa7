import Foundation

/// Is the Avahi daemon reachable, and can a driver browse through it?
struct AvahiCheck {
    let outcome: AvahiProbe.Outcome

    func run() -> Diagnosis {
        let bus = ProcessInfo.processInfo.environment["DBUS_SYSTEM_BUS_ADDRESS"].map { "the system bus at \($0)" } ?? "the system bus"
        switch outcome {
        case .browsed(let services):
            let count = services.values.map(\.count).reduce(0, +)
            return Diagnosis("avahi", "avahi-daemon", .ok,
                             "avahi-daemon answers on \(bus) and browsing works (\(count) service\(count == 1 ? "" : "s") of \(AvahiProbe.serviceTypes.keys.sorted().joined(separator: ", ")) seen)")
        case .unavailable(let why):
            let start = why.contains("D-Bus system bus") ? "start the D-Bus system bus and avahi-daemon" : "start avahi-daemon (`systemctl start avahi-daemon`)"
            return Diagnosis("avahi", "avahi-daemon", .problem, "the reference and AirPlay drivers cannot browse: \(why)",
                             fix: "\(start), and check that mediarouted's drivers use \(bus), as this check did")
        }
    }
}
