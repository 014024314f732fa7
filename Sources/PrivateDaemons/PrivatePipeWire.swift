import CLinuxHelpers
import Foundation
import MediaRouteIPC

/// A headless PipeWire of one test's own: `pipewire` with a null sink (`mediaroute_null`, a
/// `support.null-audio-sink` adapter node, 48 kHz stereo) and `wireplumber`, the session manager
/// that makes the sink the default and links streams to it, both on a private runtime directory
/// (0700) with their configuration, state and home in a temporary directory, run in the foreground
/// and stopped by PID. What plays into the sink is recorded from its monitor with `pw-record`.
/// Neither daemon uses D-Bus as configured here (`IsolatedPipeWireConfiguration`: no device
/// monitors, no portal, no real-time module); their bus addresses name a socket nobody listens on,
/// so they never reach the machine's buses nor start one. Never the machine's own sound server.
public final class PrivatePipeWire: PrivateSoundServer {
    public static let sink = "mediaroute_null"
    public static let audioOutput = "pipewire"
    public let directory: String
    /// Where the server's socket (`pipewire-0`) is.
    public let runtimeDirectory: String
    private let server: ConsoleProcess
    private let sessionManager: ConsoleProcess?
    private let recorders = SinkRecorders()

    /// Without `sessionManager`, no wireplumber: nothing makes the sink the default or links
    /// streams to it (what a server without its session manager does).
    public init(sessionManager withSessionManager: Bool = true) async throws {
        let directory = try Self.makeDirectory(prefix: "mediaroute-pipewire", folders: ["runtime", "config", "state", "home"])
        self.directory = directory
        runtimeDirectory = directory + "/runtime"
        let configuration = IsolatedPipeWireConfiguration(directory: directory + "/config", nullSink: Self.sink)
        let daemons = Self.daemonEnvironment(directory, configuration: configuration)
        var started: [ConsoleProcess] = []
        do {
            try configuration.write()
            let server = try Self.startDaemon("/usr/bin/pipewire", [], environment: daemons.server,
                                              logPath: directory + "/pipewire.log", package: "pipewire-bin")
            started.append(server)
            try await Self.waitUntilListening(server, socket: directory + "/runtime/pipewire-0")
            var sessionManager: ConsoleProcess?
            if withSessionManager {
                let manager = try Self.startDaemon("/usr/bin/wireplumber", [], environment: daemons.sessionManager, logPath: directory + "/wireplumber.log", package: "wireplumber")
                started.append(manager)
                sessionManager = manager
                try await Self.waitForDefaultSink(in: directory, environment: daemons.sessionManager, sessionManager: manager)
            }
            self.server = server
            self.sessionManager = sessionManager
        } catch {
            for daemon in started.reversed() { await daemon.stop() }
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
    }

    /// What a client (and PipeWire's ALSA device) needs to reach this server and no other.
    public var environment: [String: String] {
        ["XDG_RUNTIME_DIR": runtimeDirectory, "PIPEWIRE_RUNTIME_DIR": runtimeDirectory, "PIPEWIRE_REMOTE": "pipewire-0"]
    }

    /// The daemons' environment: the clients', private state and home directories, and the
    /// isolated configuration's (which also points their bus addresses where nothing listens).
    private static func daemonEnvironment(_ directory: String, configuration: IsolatedPipeWireConfiguration) -> (server: [String: String], sessionManager: [String: String]) {
        let runtime = directory + "/runtime"
        let clients = ["XDG_RUNTIME_DIR": runtime, "PIPEWIRE_RUNTIME_DIR": runtime, "PIPEWIRE_REMOTE": "pipewire-0", "HOME": directory + "/home",
                       "XDG_STATE_HOME": directory + "/state"]
        let deadSocket = directory + "/no-bus"
        return (clients.merging(configuration.serverEnvironment(deadSocket: deadSocket)) { _, new in new },
                clients.merging(configuration.sessionManagerEnvironment(deadSocket: deadSocket)) { _, new in new })
    }

    /// Returns once `socket` accepts connections (it exists from bind(), before listen()).
    private static func waitUntilListening(_ server: ConsoleProcess, socket: String) async throws {
        let deadline = ContinuousClock.now + .seconds(15)
        while ContinuousClock.now < deadline {
            if let ended = server.process.exitIfEnded() {
                throw PrivateDaemonError("pipewire \(ended) before listening at \(socket); it printed:\n\(server.output.suffix(1500))")
            }
            if accepts(socket) { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw PrivateDaemonError("pipewire did not listen at \(socket) within 15 s; it printed:\n\(server.output.suffix(1500))")
    }

    private static func accepts(_ path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        let length = clh_sockaddr_un(&address, path)
        guard length > 0 else { return false }
        return withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(length)) == 0 } }
    }

    /// Returns once wireplumber has made the null sink the default (the `default` metadata says
    /// so, watched with `pw-metadata -m`): from then on it links new streams to it.
    private static func waitForDefaultSink(in directory: String, environment: [String: String], sessionManager: ConsoleProcess) async throws {
        let watcher = try startDaemon("/usr/bin/pw-metadata", ["-m", "-n", "default"], environment: environment, logPath: directory + "/metadata.log", package: "pipewire-bin")
        do {
            try await watcher.waitFor("key:'default.audio.sink' value:'{\"name\":\"\(sink)\"}'", seconds: 15)
            await watcher.stop()
        } catch {
            await watcher.stop()
            throw PrivateDaemonError("wireplumber did not make \(sink) the default sink within 15 s (\(error)); wireplumber printed:\n\(sessionManager.output.suffix(1500))")
        }
    }

    public func record(to path: String) async throws -> ConsoleProcess {
        // pw-record prints through stdio: line-buffered (stdbuf) so that its state comes as it changes.
        // 10 ms of latency, as parec's for PulseAudio: a recorder asking for more would set the graph's
        // period, which then changes when the receiver's stream joins (a stall of 20-25 ms).
        try await recorders.start("/usr/bin/stdbuf", ["-oL", "/usr/bin/pw-record", "-v", "-P", "{ stream.capture.sink = true }", "--target", Self.sink,
                                                      "--latency", "10ms", "--format", "f32", "--rate", "48000", "--channels", "2", path],
                                  environment: environment, path: path, ready: "-> streaming")
    }

    public func finish(_ recorder: ConsoleProcess) async { await recorders.finish(recorder) }

    /// Stops wireplumber (by its PID), as when it crashes or restarts mid-session: the server and
    /// its sink stay, but from then on nothing links a new stream to the sink.
    public func stopSessionManager() async { await sessionManager?.stop() }

    public func stop() async {
        await recorders.stopAll()
        await sessionManager?.stop()
        await server.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }
}
