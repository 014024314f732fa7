import ArgumentParser
import MediaRouteIPC

struct Status: SimpleCommand {
    static let configuration = CommandConfiguration(abstract: "Show the daemon, its drivers and active routes.")
    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let status = try await once("status")
        options.output(status) {
            let object = status.objectValue ?? [:]
            let drivers = object["drivers"]?.arrayValue ?? []
            let running = drivers.filter { $0.objectValue?["state"]?.stringValue == "running" }.count
            let failed = drivers.filter { $0.objectValue?["state"]?.stringValue?.hasPrefix("failed") == true }.count
            let routes = object["routes"]?.arrayValue ?? []
            var lines = ["mediarouted pid \(object["pid"]?.integerValue ?? 0), up \(duration(object["uptimeSeconds"]?.integerValue)), socket \(object["socket"]?.stringValue ?? "?")",
                         "drivers: \(drivers.count) (\(running) running, \(failed) failed)", "active routes: \(routes.count)"]
            if !routes.isEmpty { lines.append(table(routeHeader, routes.map(describeRoute))) }
            let events = object["recentEvents"]?.arrayValue?.compactMap(\.stringValue) ?? []
            if !events.isEmpty { lines.append("recent events:\n" + events.map { "  " + $0 }.joined(separator: "\n")) }
            return lines.joined(separator: "\n")
        }
    }
}

struct Drivers: SimpleCommand {
    static let configuration = CommandConfiguration(abstract: "List drivers: state, pid, restarts, uptime, last exit.")
    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let result = try await once("drivers.list")
        options.output(result) {
            let rows = (result.objectValue?["drivers"]?.arrayValue ?? []).map { value -> [String] in
                let d = value.objectValue ?? [:]
                return [d["protocol"]?.stringValue ?? "?", d["displayName"]?.stringValue ?? "?", d["state"]?.stringValue ?? "?",
                        d["pid"]?.integerValue.map(String.init) ?? "-", String(d["restarts"]?.integerValue ?? 0),
                        duration(d["uptimeSeconds"]?.integerValue), d["lastExit"]?.stringValue ?? "-"]
            }
            return rows.isEmpty ? "no drivers" : table(["PROTOCOL", "NAME", "STATE", "PID", "RESTARTS", "UPTIME", "LAST EXIT"], rows)
        }
    }
}

/// `restart`, `enable`, `disable`: one request naming a driver by protocol identifier.
protocol DriverOperation: SimpleCommand {
    static var method: String { get }
    static var done: String { get }
    var driver: String { get }
}

extension DriverOperation {
    func run() async throws {
        _ = try await once(Self.method, ["protocol": .string(driver)])
        options.output(.null) { "\(Self.done) \(driver)" }
    }
}

struct Restart: DriverOperation {
    static let configuration = CommandConfiguration(abstract: "Restart a driver now.")
    static let method = "driver.restart", done = "restarted"
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The driver's protocol identifier (see `mediaroute drivers`).") var driver: String
}

struct Enable: DriverOperation {
    static let configuration = CommandConfiguration(abstract: "Let a failed or disabled driver run again (with a fresh restart budget).")
    static let method = "driver.enable", done = "enabled"
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The driver's protocol identifier.") var driver: String
}

struct Disable: DriverOperation {
    static let configuration = CommandConfiguration(abstract: "Stop a driver and keep it stopped, across daemon restarts.")
    static let method = "driver.disable", done = "disabled"
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The driver's protocol identifier.") var driver: String
}
