import ArgumentParser
import MediaRouteWire

struct Activate: SimpleCommand {
    static let configuration = CommandConfiguration(abstract: "Connect to a device (pairing if it asks), making it a route.")
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The device's name (as `mediaroute devices` shows it) or id.") var device: String
    @Option(name: .customLong("protocol"), help: "Use this protocol instead of the device's preferred one.") var protocolID: String?
    @Option(help: "The pairing code or password, for scripts (otherwise you are asked).") var code: String?

    func validate() throws {
        if code?.isEmpty == true { throw ValidationError("--code must not be empty; leave it out to be asked for the code") }
    }

    func run() async throws {
        let route = try await once(Control.Activate(device: device, protocol: protocolID), pairingCode: code, timeout: .seconds(600))
        options.output(route) { "\(route.device.displayName) is active through \(route.protocolName) (\(route.session))" }
    }
}

struct Deactivate: SimpleCommand {
    static let configuration = CommandConfiguration(abstract: "Disconnect an active device.")
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The device's name or id.") var device: String
    func run() async throws {
        _ = try await once(Control.Deactivate(device: device))
        options.output(NoResult()) { "\(device) deactivated" }
    }
}

struct Prefer: SimpleCommand {
    static let configuration = CommandConfiguration(abstract: "Make a protocol the default for a device several drivers see (remembered).")
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The device's name.") var device: String
    @Argument(help: "The protocol identifier to prefer.") var protocolID: String
    func run() async throws {
        _ = try await once(Control.Prefer(device: device, protocol: protocolID))
        options.output(NoResult()) { "\(device) now prefers \(protocolID)" }
    }
}

struct Rename: SimpleCommand {
    static let configuration = CommandConfiguration(abstract: "Give a device a nickname, shown and accepted in place of its own name (remembered).")
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The device's name (or nickname) or id.") var device: String
    @Argument(help: "The nickname.") var name: String?
    @Flag(help: "Give the device its own name back.") var clear = false

    func validate() throws {
        if clear == (name != nil) { throw ValidationError(clear ? "--clear takes no nickname" : "give a nickname, or --clear to give the device its own name back") }
        if name?.allSatisfy(\.isWhitespace) == true { throw ValidationError("a nickname cannot be blank") }
    }

    func run() async throws {
        _ = try await once(Control.Rename(device: device, name: name))
        options.output(NoResult()) { name.map { "\(device) is now shown as \($0)" } ?? "\(device) has its own name again" }
    }
}

struct Sessions: SimpleCommand {
    static let configuration = CommandConfiguration(abstract: "List active routes and what plays on them.")
    @OptionGroup var options: GlobalOptions
    func run() async throws {
        let result = try await once(Control.ListRoutes())
        options.output(result) { result.routes.isEmpty ? "no active routes" : table(routeHeader, result.routes.map(describeRoute)) }
    }
}

struct NowPlaying: SimpleCommand {
    static let configuration = CommandConfiguration(
        commandName: "nowplaying",
        abstract: "List what plays: apps' remote sessions and the media sessions on routes, as the desktop's media controls show them.")
    @OptionGroup var options: GlobalOptions
    func run() async throws {
        let result = try await once(Control.NowPlaying())
        options.output(result) {
            guard !result.sessions.isEmpty else { return "nothing plays" }
            return table(["KIND", "APP", "ID", "TITLE", "STATUS", "POSITION", "DEVICES", "MPRIS"], result.sessions.map { entry in
                let position = entry.position.map { p in entry.duration.map { "\(Int(p))/\(Int($0)) s" } ?? "\(Int(p)) s" } ?? "-"
                let title = [entry.title, entry.artist].compactMap { $0 }.joined(separator: " — ")
                return [entry.kind.rawValue + (entry.systemPrimary ? " (primary)" : ""), entry.application ?? "-", entry.id, title.isEmpty ? "-" : title,
                        entry.status, position, entry.devices.joined(separator: ", "), entry.mprisName ?? "-"]
            })
        }
    }
}
