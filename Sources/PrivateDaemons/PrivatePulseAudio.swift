import Foundation
import Synchronization
import MediaRouteIPC

/// A headless PulseAudio of one test's own: a null sink (`mediaroute_null`, 48 kHz stereo) as the
/// default, its socket in a temporary directory (its own runtime and home directories too), run in
/// the foreground and stopped by PID. What plays into the sink is recorded from its monitor with
/// `parec`. Never the machine's own sound server.
public final class PrivatePulseAudio: Sendable {
    public static let sink = "mediaroute_null"
    public let directory: String
    public let socket: String
    private let daemon: ConsoleProcess
    private let recorders = Mutex<[ConsoleProcess]>([])

    public init() async throws {
        directory = NSTemporaryDirectory() + "mediaroute-pulse-\(UUID().uuidString.prefix(8))"
        socket = directory + "/native"
        for folder in ["runtime", "home"] {
            try FileManager.default.createDirectory(atPath: directory + "/" + folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        let arguments = ["--daemonize=no", "-n", "--use-pid-file=no", "--exit-idle-time=-1", "--disallow-exit", "--disallow-module-loading",
                         "--log-target=stderr", "--log-level=info",
                         "--load=module-native-protocol-unix socket=\(socket) auth-anonymous=1",
                         "--load=module-null-sink sink_name=\(Self.sink) rate=48000 channels=2"]
        do {
            daemon = try ConsoleProcess("/usr/bin/pulseaudio", arguments, environment: ["XDG_RUNTIME_DIR": directory + "/runtime", "HOME": directory + "/home"],
                                        logPath: directory + "/pulseaudio.log")
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw PrivateDaemonError("cannot start pulseaudio (apt-get install pulseaudio): \(error)")
        }
        do {
            try await daemon.waitFor("Daemon startup complete", seconds: 10)
        } catch {
            let log = daemon.output.suffix(600)
            await stop()
            throw PrivateDaemonError("pulseaudio did not start within 10 s: \(log)")
        }
    }

    /// What a client (and ALSA's `pulse` device) needs to reach this server and no other.
    public var environment: [String: String] {
        ["PULSE_SERVER": "unix:" + socket, "XDG_RUNTIME_DIR": directory + "/runtime", "PULSE_SINK": Self.sink]
    }

    /// Starts recording the sink's monitor into `path` (a WAV of 48 kHz stereo Float32), until `stop`
    /// or `finish(_:)`.
    public func record(to path: String) async throws -> ConsoleProcess {
        let recorder = try ConsoleProcess("/usr/bin/parec", ["--device=\(Self.sink).monitor", "--format=float32le", "--rate=48000", "--channels=2",
                                                             "--file-format=wav", "--latency-msec=10", "-v", path],
                                          environment: environment, logPath: path + ".log")
        recorders.withLock { $0.append(recorder) }
        try await recorder.waitFor("Stream successfully created", seconds: 10)
        return recorder
    }

    /// Stops a recorder by PID; its WAV is complete once this returns.
    public func finish(_ recorder: ConsoleProcess) async {
        await recorder.stop()
        recorders.withLock { $0.removeAll { $0 === recorder } }
    }

    /// Stops the recorders and the daemon by PID and removes the directory.
    public func stop() async {
        for recorder in recorders.withLock({ list in defer { list = [] }; return list }) { await recorder.stop() }
        await daemon.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }
}
