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

    /// Opens `path`, directly if it is a WAV of a rate Opus takes (8, 12, 16, 24 or 48 kHz, mono or
    /// stereo), else through ffmpeg; the error says which of these failed.
    init(path: String) throws {
        guard FileManager.default.isReadableFile(atPath: path) else { throw CLIError("cannot read \(path)") }
        if let wav = try? WAVReader(path: path), [8_000, 12_000, 16_000, 24_000, 48_000].contains(wav.sampleRate), (1...2).contains(wav.channels) {
            self.wav = wav
            format = .audio(sampleRate: wav.sampleRate, channels: wav.channels, sampleType: .float32)
            pipe = nil
            child = nil
            return
        }
        guard let ffmpeg = ["/usr/bin/ffmpeg", "/usr/local/bin/ffmpeg"].first(where: FileManager.default.isExecutableFile(atPath:)) else {
            throw CLIError("\(path) is not a WAV file of 8, 12, 16, 24 or 48 kHz, and ffmpeg (to convert it) is not installed: apt-get install ffmpeg")
        }
        var ends: [Int32] = [-1, -1]
        guard Glibc.pipe(&ends) == 0 else { throw CLIError("cannot make a pipe for ffmpeg") }
        let devNull = open("/dev/null", O_RDWR | O_CLOEXEC)
        defer { close(devNull); close(ends[1]) }
        _ = fcntl(ends[0], F_SETFD, FD_CLOEXEC)
        child = try ChildProcess(executable: ffmpeg, arguments: ["-hide_banner", "-loglevel", "error", "-nostdin", "-i", path, "-f", "f32le", "-ac", "2", "-ar", "48000", "-"],
                                 standardInput: devNull, standardOutput: ends[1], standardError: devNull)
        pipe = FileHandle(fileDescriptor: ends[0], closeOnDealloc: true)
        wav = nil
        format = .defaultAudio
    }

    /// Up to `frames` frames of interleaved Float32; empty at the end.
    func read(frames: Int) -> [Float] {
        if let wav { return wav.read(frames: frames) }
        guard let pipe, case .audio(_, let channels, _) = format else { return [] }
        var bytes = Data()
        while bytes.count < frames * channels * 4, let more = try? pipe.read(upToCount: frames * channels * 4 - bytes.count), !more.isEmpty {
            bytes.append(more)
        }
        let samples = bytes.count / 4
        return bytes.withUnsafeBytes { raw in (0..<samples).map { raw.load(fromByteOffset: 4 * $0, as: Float.self) } }
    }

    deinit { child?.signal(SIGKILL) }
}
