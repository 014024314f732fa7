import CLinuxHelpers
import Foundation
import Glibc
import MediaCodecs
import MediaRouteIPC

/// Where `mediaroute stream` takes its audio: a WAV file read directly, or any other file decoded
/// by an ffmpeg child to 48 kHz stereo. Read on a thread that may block.
final class AudioSource: @unchecked Sendable {
    let format: SampleFormat
    private let wav: WAVReader?
    private let pipe: FileHandle?
    private let child: ChildProcess?
    /// ffmpeg's standard error, in memory (a memfd): read once it has ended.
    private let errors: Int32
    private let path: String
    private var reachedEnd = false

    /// Opens `path`, directly if it is a WAV of a rate Opus takes (8, 12, 16, 24 or 48 kHz, mono or
    /// stereo), else through ffmpeg; the error says which of these failed.
    init(path: String) throws {
        guard FileManager.default.isReadableFile(atPath: path) else { throw CLIError("cannot read \(path)") }
        self.path = path
        if let wav = try? WAVReader(path: path), case let direct = SampleFormat.audio(sampleRate: wav.sampleRate, channels: wav.channels, sampleType: .float32),
           direct.problem == nil {
            self.wav = wav
            format = direct
            pipe = nil
            child = nil
            errors = -1
            return
        }
        guard let ffmpeg = ["/usr/bin/ffmpeg", "/usr/local/bin/ffmpeg"].first(where: FileManager.default.isExecutableFile(atPath:)) else {
            throw CLIError("\(path) is not a WAV file of 8, 12, 16, 24 or 48 kHz, and ffmpeg (to convert it) is not installed: apt-get install ffmpeg")
        }
        var ends: [Int32] = [-1, -1]
        let devNull = open("/dev/null", O_RDONLY | O_CLOEXEC)
        let errors = clh_memfd_create("ffmpeg-errors")
        guard devNull >= 0, errors >= 0, clh_pipe_cloexec(&ends) == 0 else {
            [devNull, errors].filter { $0 >= 0 }.forEach { _ = close($0) }
            throw CLIError("cannot start ffmpeg: \(String(cString: strerror(errno)))")
        }
        defer { close(devNull); close(ends[1]) }
        do {
            child = try ChildProcess(executable: ffmpeg, arguments: ["-hide_banner", "-loglevel", "error", "-nostdin", "-i", path, "-f", "f32le", "-ac", "2", "-ar", "48000", "-"],
                                     standardInput: devNull, standardOutput: ends[1], standardError: errors)
        } catch {
            close(ends[0])
            close(errors)
            throw CLIError("cannot start ffmpeg: \(error)")
        }
        self.errors = errors
        pipe = FileHandle(fileDescriptor: ends[0], closeOnDealloc: true)
        wav = nil
        format = .defaultAudio
    }

    /// Up to `frames` frames of interleaved Float32; empty at the end.
    func read(frames: Int) -> [Float] {
        if let wav { return wav.read(frames: frames) }
        guard let pipe, case .audio(_, let channels, _) = format else { return [] }
        var bytes = Data()
        while bytes.count < frames * channels * 4 {
            guard let more = try? pipe.read(upToCount: frames * channels * 4 - bytes.count), !more.isEmpty else {
                reachedEnd = true
                break
            }
            bytes.append(more)
        }
        let samples = bytes.count / (4 * channels) * channels  // whole frames only
        return bytes.withUnsafeBytes { raw in (0..<samples).map { raw.load(fromByteOffset: 4 * $0, as: Float.self) } }
    }

    /// Why the audio ended early: ffmpeg could not read or decode the file. Ask once `read` is empty.
    var failure: String? {
        guard let child, reachedEnd else { return nil }
        let ended = child.waitForExit()  // it closed its output: it has ended, or is about to
        guard ended != .exited(0) else { return nil }
        var text = [UInt8](repeating: 0, count: 4096)
        let size = lseek(errors, 0, SEEK_END)
        let n = pread(errors, &text, text.count, max(0, Int(size) - text.count))
        let last = String(decoding: text[0..<max(n, 0)], as: UTF8.self).split(separator: "\n").last.map(String.init)
        return "ffmpeg could not decode \(path) (\(ended))\(last.map { ": \($0)" } ?? "")"
    }

    deinit {
        child?.signal(SIGKILL)
        if errors >= 0 { close(errors) }
    }
}
