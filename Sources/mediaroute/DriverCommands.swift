import ArgumentParser
import MediaRouteWire

struct Status: SimpleCommand {
    static let configuration = CommandConfiguration(abstract: "Show the daemon, its drivers and active routes.")
    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let status = try await once(Control.Status())
        options.output(status) {
            let running = status.drivers.filter { $0.state == "running" }.count
            let failed = status.drivers.filter { $0.state.hasPrefix("failed") }.count
            var lines = ["mediarouted pid \(status.pid), up \(duration(status.uptimeSeconds)), socket \(status.socket)",
                         "drivers: \(status.drivers.count) (\(running) running, \(failed) failed)", "active routes: \(status.routes.count)",
                         "pushes: \(status.pushAddress.map { "accepted on \($0)" } ?? "not accepted")"]
            if !status.routes.isEmpty { lines.append(table(routeHeader, status.routes.map(describeRoute))) }
            if !status.recentEvents.isEmpty { lines.append("recent events:\n" + status.recentEvents.map { "  " + $0 }.joined(separator: "\n")) }
            return lines.joined(separator: "\n")
        }
    }
}

struct Drivers: SimpleCommand {
    static let configuration = CommandConfiguration(abstract: "List drivers: state, pid, restarts, uptime, last exit.")
    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let result = try await once(Control.ListDrivers())
        options.output(result) {
            let rows = result.drivers.map { d in
                [d.protocol, d.displayName, Self.state(of: d), d.pid.map(String.init) ?? "-", String(d.restarts), duration(d.uptimeSeconds), d.lastExit ?? "-"]
            }
            return rows.isEmpty ? "no drivers" : table(["PROTOCOL", "NAME", "STATE", "PID", "RESTARTS", "UPTIME", "LAST EXIT"], rows)
        }
    }

    /// A refused driver is mended in its manifest (it stays refused until that changes): its state
    /// names the file, which a manifest too broken to name its protocol leaves no other way to find.
    static func state(of driver: DriverReport) -> String {
        driver.state.hasPrefix("refused") ? "\(driver.state) (\(driver.manifest))" : driver.state
    }
}

/// `restart`, `enable`, `disable`: one request naming a driver by protocol identifier.
protocol DriverOperation: SimpleCommand {
    associatedtype Request: WireRequest
    static var done: String { get }
    var driver: String { get }
    var request: Request { get }
}

extension DriverOperation {
    func run() async throws {
        _ = try await once(request)
        options.output(NoResult()) { "\(Self.done) \(driver)" }
    }
}

struct Restart: DriverOperation {
    static let configuration = CommandConfiguration(abstract: "Restart a driver now.")
    static let done = "restarted"
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The driver's protocol identifier (see `mediaroute drivers`).") var driver: String
    var request: Control.RestartDriver { .init(protocol: driver) }
}

struct Enable: DriverOperation {
    static let configuration = CommandConfiguration(abstract: "Let a failed or disabled driver run again (with a fresh restart budget).")
    static let done = "enabled"
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The driver's protocol identifier.") var driver: String
    var request: Control.EnableDriver { .init(protocol: driver) }
}

struct Disable: DriverOperation {
    static let configuration = CommandConfiguration(abstract: "Stop a driver and keep it stopped, across daemon restarts.")
    static let done = "disabled"
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The driver's protocol identifier.") var driver: String
    var request: Control.DisableDriver { .init(protocol: driver) }
}
