import Foundation
import MediaRouteIPC

/// A headless PulseAudio of one test's own: a null sink (`mediaroute_null`, 48 kHz stereo) as the
/// default, its socket in a temporary directory (its own runtime and home directories too), run in
/// the foreground and stopped by PID. What plays into the sink is recorded from its monitor with
/// `parec`. Never the machine's own sound server.
public final class PrivatePulseAudio: PrivateSoundServer {
    public static let sink = "mediaroute_null"
    public static let audioOutput = "pulse"
    public let directory: String
    public let socket: String
    private let daemon: ConsoleProcess
    private let recorders = SinkRecorders()

    public init() async throws {
        directory = try Self.makeDirectory(prefix: "mediaroute-pulse", folders: ["runtime", "home"])
        socket = directory + "/native"
        let arguments = ["--daemonize=no", "-n", "--use-pid-file=no", "--exit-idle-time=-1", "--disallow-exit", "--disallow-module-loading",
                         "--log-target=stderr", "--log-level=info",
                         "--load=module-native-protocol-unix socket=\(socket) auth-anonymous=1",
                         "--load=module-null-sink sink_name=\(Self.sink) rate=48000 channels=2"]
        do {
            daemon = try Self.startDaemon("/usr/bin/pulseaudio", arguments, environment: ["XDG_RUNTIME_DIR": directory + "/runtime", "HOME": directory + "/home"],
                                          logPath: directory + "/pulseaudio.log", package: "pulseaudio")
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
        do {
            try await daemon.waitFor("Daemon startup complete", seconds: 10)
        } catch {
            let log = daemon.output.suffix(600)
            await stop()
            throw PrivateDaemonError("pulseaudio did not start within 10 s: \(log)")
        }
    }

    public var environment: [String: String] {
        ["PULSE_SERVER": "unix:" + socket, "XDG_RUNTIME_DIR": directory + "/runtime", "PULSE_SINK": Self.sink]
    }

    public func record(to path: String) async throws -> ConsoleProcess {
        try await recorders.start("/usr/bin/parec", ["--device=\(Self.sink).monitor", "--format=float32le", "--rate=48000", "--channels=2",
                                                     "--file-format=wav", "--latency-msec=10", "-v", path],
                                  environment: environment, path: path, ready: "Stream successfully created")
    }

    public func finish(_ recorder: ConsoleProcess) async { await recorders.finish(recorder) }

    public func stop() async {
        await recorders.stopAll()
        await daemon.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }
}
