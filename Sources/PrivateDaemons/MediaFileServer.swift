import Foundation
import MediaRouteIPC

/// Serves a directory of media over HTTP on loopback (Python's `http.server`, started by PID),
/// for receivers to fetch; and makes media files to serve with ffmpeg.
public final class MediaFileServer: @unchecked Sendable {
    public let directory: String
    public let port: UInt16
    private let process: ChildProcess

    public init(directory: String) async throws {
        self.directory = directory
        let logPath = directory + "/.http-server.log"
        let log = open(logPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        defer { close(log) }
        process = try ChildProcess(executable: "/usr/bin/python3", arguments: ["-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", directory],
                                   standardOutput: log, standardError: log)
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if let ended = process.exitIfEnded() {
                throw PrivateDaemonError("python3 -m http.server \(ended): \((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "")")
            }
            // "Serving HTTP on 127.0.0.1 port 40123 (http://127.0.0.1:40123/) ..."
            if let text = try? String(contentsOfFile: logPath, encoding: .utf8), let range = text.range(of: " port ") {
                let digits = text[range.upperBound...].prefix { $0.isNumber }
                if let port = UInt16(digits) {
                    self.port = port
                    return
                }
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        process.signal(SIGKILL)
        throw PrivateDaemonError("python3 -m http.server did not start within 10 s")
    }

    public func url(_ file: String) -> String { "http://127.0.0.1:\(port)/\(file)" }

    public func stop() async {
        kill(process.pid, SIGTERM)
        _ = await process.exitStatus()
    }

    /// Writes a stereo 48 kHz WAV of a `frequency` Hz tone lasting `seconds`, titled `title`.
    public static func makeTone(at path: String, seconds: Double, frequency: Int = 440, title: String) async throws {
        try await makeTones(at: path, [(frequency, seconds)], title: title)
    }

    /// Tones one after the other (`frequency` for `seconds` each), as one file: a seek is heard by
    /// the tone that plays after it.
    public static func makeTones(at path: String, _ parts: [(frequency: Int, seconds: Double)], title: String) async throws {
        let inputs = parts.flatMap { ["-f", "lavfi", "-i", "sine=frequency=\($0.frequency):sample_rate=48000:duration=\($0.seconds)"] }
        let joined = (0..<parts.count).map { "[\($0):a]" }.joined() + "concat=n=\(parts.count):v=0:a=1"
        let output = try await ChildOutput.run("/usr/bin/ffmpeg", ["-hide_banner", "-loglevel", "error", "-y"] + inputs
                                                   + ["-filter_complex", joined, "-ac", "2", "-metadata", "title=\(title)", path])
        guard output.termination == .exited(0) else { throw PrivateDaemonError("ffmpeg could not make \(path): \(output.standardError)") }
    }
}
