import ArgumentParser
import AVSystemRouting
import CLinuxHelpers
import Foundation
import MediaDevice

/// An example app, built only on AVSystemRouting: it waits for a route of the protocols it
/// declares, plays a URL there, prints what happens, and takes commands on standard input.
@main
struct MediaroutePlayer: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mediaroute-player",
        abstract: "Play a URL on the next route of the given protocols, and control it.",
        discussion: """
        Activate a device with `mediaroute activate DEVICE`; the player starts as soon as a route of its
        protocols is active. Commands on standard input, one per line: play, pause, seek SECONDS,
        speed RATE, volume 0-100, mute, unmute, send TEXT (the session's data channel), route-send TEXT
        (the route's data channel), quit. End of input quits too.
        """)

    @Option(name: .customLong("protocol"), help: "A protocol this app handles (its MDESupportedProtocols); repeat for several.")
    var protocols: [String]
    @Option(name: .customLong("app-id"), help: "The app's identifier; a .application session launches the device's application of this name.")
    var applicationIdentifier = "org.mediaroute.player"
    @Option(help: "player: the device's own player; application: the app's counterpart on the device, with a data channel.")
    var mode: Mode = .player
    @Option(help: "Seconds to wait for a route.")
    var wait: Double = 60
    @Option(help: "mediarouted's socket.")
    var socket: String?
    @Argument(help: "The URL of the media.")
    var url: String

    enum Mode: String, ExpressibleByArgument { case player, application }

    func validate() throws {
        if protocols.isEmpty { throw ValidationError("name at least one protocol with --protocol, e.g. --protocol org.mediaroute.reference") }
        guard let parsed = URL(string: url), parsed.scheme != nil else { throw ValidationError("\"\(url)\" is not a URL") }
        guard wait > 0, wait <= 3600 else { throw ValidationError("--wait must be more than 0 and at most 3600 seconds, not \(wait)") }
    }

    func run() async throws {
        clh_line_buffer_stdout()
        let controller = AVSystemRouteController(configuration: .init(applicationIdentifier: applicationIdentifier, supportedProtocols: protocols,
                                                                      socketPath: socket))
        let console = await MainActor.run { Console() }
        guard controller.addObserver(console) else {
            throw PlayerError("mediarouted is not running (nothing listens on \(socket ?? "the default socket")); start it first")
        }
        print("waiting for a route of \(protocols.joined(separator: ", ")); activate a device with `mediaroute activate DEVICE`")
        let route = try await console.firstRoute(within: .milliseconds(Int(wait * 1000)))
        print("route active: \(route.routeDisplayName) through \(route.protocolName) (\(route.identifier))")

        let session = AVSystemRouteSession(url: URL(string: url)!, mode: mode == .application ? .application : .player)
        guard route.addSession(session) else { throw PlayerError("\(route.routeDisplayName) cannot take another session now") }
        let media: AVSystemRouteMediaSession
        do {
            media = try await session.start()
        } catch {
            route.removeSession(session)
            throw PlayerError("\(route.routeDisplayName) did not start \(url): \(error)")
        }
        print("session started: \(media.identifier) in \(mode.rawValue) mode\(media.application.map { " (application \($0))" } ?? "")")
        await console.watch(media, controller: controller)

        for await line in StandardInput.lines() {
            guard await console.perform(line, media: media) else { break }
        }
        try? await session.stop()
        route.removeSession(session)
        print("stopped")
    }
}

struct PlayerError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Lines typed (or piped) on standard input, read on a thread of their own.
enum StandardInput {
    static func lines() -> AsyncStream<String> {
        AsyncStream { continuation in
            Thread.detachNewThread {
                while let line = readLine() { continuation.yield(line) }
                continuation.finish()
            }
        }
    }
}
