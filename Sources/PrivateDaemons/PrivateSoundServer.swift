import Foundation

/// A sound server of one test's own, PulseAudio's or PipeWire's: a null sink as its default, what
/// plays into it recorded from the sink's monitor, everything stopped by PID. Tests written against
/// this run the same on either.
public protocol PrivateSoundServer: Sendable {
    /// The receiver's `--audio-output` that reaches this kind of server.
    static var audioOutput: String { get }
    /// What a client (and the server's ALSA device) needs to reach this server and no other.
    var environment: [String: String] { get }
    /// Starts recording the sink's monitor into `path` (a WAV of 48 kHz stereo Float32), until
    /// `finish(_:)` or `stop()`; returns once the recorder takes sound.
    func record(to path: String) async throws -> ConsoleProcess
    /// Stops a recorder by PID; its WAV is complete once this returns.
    func finish(_ recorder: ConsoleProcess) async
    /// Stops the recorders and the server by PID and removes its directory.
    func stop() async
}

extension PrivateSoundServer {
    /// A new directory for one server under the temporary directory, named `prefix` and a random
    /// part (servers started side by side never share one), with `folders` in it, each 0700 as a
    /// runtime directory must be.
    static func makeDirectory(prefix: String, folders: [String]) throws -> String {
        let directory = NSTemporaryDirectory() + "\(prefix)-\(UUID().uuidString.prefix(8))"
        do {
            for folder in folders {
                try FileManager.default.createDirectory(atPath: directory + "/" + folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            }
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw PrivateDaemonError("cannot make \(directory) for a private sound server: \(error)")
        }
        return directory
    }

    /// Starts `executable` as one of the server's daemons, its output in `logPath`; says what to
    /// install if it cannot start.
    static func startDaemon(_ executable: String, _ arguments: [String], environment: [String: String], logPath: String,
                            package: String) throws -> ConsoleProcess {
        do {
            return try ConsoleProcess(executable, arguments, environment: environment, logPath: logPath)
        } catch {
            throw PrivateDaemonError("cannot start \(executable) (apt-get install \(package)): \(error)")
        }
    }
}
