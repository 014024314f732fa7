import ArgumentParser
import Foundation
import MediaRouteWire

struct Play: SimpleCommand {
    static let configuration = CommandConfiguration(abstract: "Play a URL on a device (activating it first if needed).")
    @OptionGroup var options: GlobalOptions
    @Argument(help: "http, https, rtsp or file URL of the media.") var url: String
    @Option(help: "The device's name or id.") var to: String
    @Option(help: "The pairing code, if activation asks for one.") var code: String?

    func validate() throws {
        guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(), ["http", "https", "rtsp", "file"].contains(scheme) else {
            throw ValidationError("\"\(url)\" is not an http, https, rtsp or file URL")
        }
    }

    func run() async throws {
        let client = try await options.connect(pairingCode: code)
        defer { Task { await client.close() } }
        try await client.activateIfNeeded(to)
        let route = try await client.call(Control.StartSession(device: to, url: url, application: nil))
        options.output(route) { "playing \(url) on \(route.device.displayName)" }
    }
}

/// Commands that change the playback of one route: `--on DEVICE`, or the only route playing.
protocol PlaybackCommand: SimpleCommand {
    var on: String? { get }
}

extension PlaybackCommand {
    func send(_ changes: PlaybackChanges) async throws -> RouteDescription {
        let client = try await options.connect()
        defer { Task { await client.close() } }
        let device = try await target(client)
        return try await client.call(Control.SetPlayback(device: device, changes: changes))
    }

    func target(_ client: DaemonClient) async throws -> String {
        if let on { return on }
        let playing = try await client.call(Control.ListRoutes()).routes.filter { $0.playback != nil }
        guard playing.count == 1 else {
            throw CLIError(playing.isEmpty ? "nothing is playing; `mediaroute play URL --to DEVICE` first" : "\(playing.count) routes are playing; say which with --on DEVICE")
        }
        return playing[0].session
    }

    func report(_ route: RouteDescription) {
        options.output(route) { table(routeHeader, [describeRoute(route)]) }
    }
}

struct Pause: PlaybackCommand {
    static let configuration = CommandConfiguration(abstract: "Pause playback.")
    @OptionGroup var options: GlobalOptions
    @Option(help: "The device (default: the only one playing).") var on: String?
    func run() async throws { report(try await send(PlaybackChanges(isPlaying: false))) }
}

struct Resume: PlaybackCommand {
    static let configuration = CommandConfiguration(abstract: "Resume playback.")
    @OptionGroup var options: GlobalOptions
    @Option(help: "The device (default: the only one playing).") var on: String?
    func run() async throws { report(try await send(PlaybackChanges(isPlaying: true))) }
}

struct Seek: PlaybackCommand {
    static let configuration = CommandConfiguration(abstract: "Seek to a position, in seconds.")
    @OptionGroup var options: GlobalOptions
    // Taken as words, so that "-5" reaches `validate` (which says what is wrong with it) instead
    // of being read as an unknown option.
    @Argument(parsing: .allUnrecognized, help: ArgumentHelp("Position in seconds from the start.", valueName: "seconds")) var words: [String] = []
    @Option(help: "The device (default: the only one playing).") var on: String?
    /// The words given, less a "--" that ends the options.
    private var values: [String] { words.filter { $0 != "--" } }
    private var seconds: Double { values.count == 1 ? Double(values[0]) ?? .nan : .nan }
    func validate() throws {
        guard let word = values.first else { throw ValidationError("seek needs a position, in seconds from the start") }
        guard values.count == 1 else { throw ValidationError("seek takes one position, not \(values.joined(separator: " "))") }
        guard let seconds = Double(word), seconds.isFinite else { throw ValidationError("the position must be a number of seconds, not \"\(word)\"") }
        guard seconds >= 0 else { throw ValidationError("the position must be zero or more seconds, not \(word)") }
    }
    func run() async throws { report(try await send(PlaybackChanges(position: seconds))) }
}

struct Stop: PlaybackCommand {
    static let configuration = CommandConfiguration(abstract: "Stop playback (the device stays active).")
    @OptionGroup var options: GlobalOptions
    @Option(help: "The device (default: the only one playing).") var on: String?
    func run() async throws {
        let client = try await options.connect()
        defer { Task { await client.close() } }
        let device = try await target(client)
        _ = try await client.call(Control.StopSession(device: device))
        options.output(NoResult()) { "stopped" }
    }
}
