import ArgumentParser
import Foundation
import MediaRouteIPC
import MediaRouteWire

/// The operator's view of MediaRoute: drivers, the route picker, pairing, playback and volume.
@main
struct Mediaroute: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mediaroute",
        abstract: "Operate the MediaRoute supervisor (mediarouted).",
        discussion: "Every command talks to mediarouted over its socket: --socket, else $MEDIAROUTE_SOCKET, else $XDG_RUNTIME_DIR/mediaroute/mediarouted.sock.",
        subcommands: [Status.self, Drivers.self, Devices.self, Activate.self, Deactivate.self, Play.self, Pause.self, Resume.self,
                      Seek.self, Stop.self, StreamCommand.self, MirrorCommand.self, Volume.self, Sessions.self, Prefer.self, Rename.self, Restart.self, Enable.self, Disable.self, Push.self, NowPlaying.self,
                      Doctor.self])

    /// Declared here too so `--socket` and `--json` may come before the command as well as after it.
    @OptionGroup var options: GlobalOptions
}

/// Options every command takes.
struct GlobalOptions: ParsableArguments {
    @Option(help: "The daemon's socket.")
    var socket: String?

    @Flag(help: "Print JSON for scripts instead of text for people.")
    var json = false

    func connect(pairingCode: String? = nil, onPickerChanged: (@Sendable (Control.PickerChanged) -> Void)? = nil,
                 onStreamEnded: (@Sendable (Streams.Ended) -> Void)? = nil) async throws -> DaemonClient {
        try await DaemonClient.connect(socket: socket, pairingCode: pairingCode, onPickerChanged: onPickerChanged, onStreamEnded: onStreamEnded)
    }

    /// Prints `value` in its wire form, or `text` for people. Both come from the one typed answer
    /// the daemon gave: what it checked is printed, not parsed again.
    func output(_ value: some Encodable, text: () -> String) {
        if json {
            print(String(decoding: JSONWriter.encode(WireEncoder.encode(value)), as: UTF8.self))
        } else {
            let rendered = text()
            if !rendered.isEmpty { print(rendered) }
        }
    }
}

/// A command that sends one request and prints the answer.
protocol SimpleCommand: AsyncParsableCommand {
    var options: GlobalOptions { get }
}

extension SimpleCommand {
    func once<Request: WireRequest>(_ request: Request, pairingCode: String? = nil, timeout: Duration = .seconds(120)) async throws -> Request.Result {
        let client = try await options.connect(pairingCode: pairingCode)
        defer { Task { await client.close() } }
        return try await client.call(request, timeout: timeout)
    }
}
