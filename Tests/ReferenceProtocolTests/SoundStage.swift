import Foundation
import PrivateDaemons
import Synchronization
import Testing

/// Where a sound test's receiver plays: a private sound server's null sink (the server named by
/// `--audio-output`), or the stand-in for a sound card: a device of a private
/// ALSA configuration (ALSA's `file` plugin in front of its `null` device, writing raw samples to
/// a file), named by `--alsa-device`. No card exists on the machines the tests run on.
enum SoundOutputUnderTest: Sendable, CustomTestStringConvertible {
    case pulseAudio(audioOutput: String)
    case pipeWire(audioOutput: String)
    case alsaFile

    static let pulse = pulseAudio(audioOutput: "pulse")
    static let pipewire = pipeWire(audioOutput: "pipewire")
    static let servers: [SoundOutputUnderTest] = [.pulse, .pipewire]
    static let all: [SoundOutputUnderTest] = [.pulse, .pipewire, .alsaFile]

    var testDescription: String {
        switch self {
        case .pulseAudio(let output): "PulseAudio (--audio-output \(output))"
        case .pipeWire(let output): "PipeWire (--audio-output \(output))"
        case .alsaFile: "ALSA's file plugin (--audio-output alsa)"
        }
    }
}

/// A sound output of one test, started by it: what the receiver is given to play there, and what
/// it played, heard back (the sink's monitor recorded, or the file the ALSA device wrote).
final class SoundStage: Sendable {
    static let alsaDevice = "mediaroute_card"
    /// The receiver's arguments and environment that make it play here.
    let arguments: [String]
    let environment: [String: String]
    /// What the receiver says at start when it took this output.
    let announcement: String
    private let server: (any PrivateSoundServer)?
    private let heardPath: String
    private let recorder = Mutex<ConsoleProcess?>(nil)

    private init(arguments: [String], environment: [String: String], announcement: String, server: (any PrivateSoundServer)?, heardPath: String) {
        self.arguments = arguments
        self.environment = environment
        self.announcement = announcement
        self.server = server
        self.heardPath = heardPath
    }

    /// Runs `body` with the output started (its files in a directory of its own), and stops it.
    /// Started before anything else a test starts: a PulseAudio asked for a stream within a second
    /// of its start stalls it for about a second.
    static func run(_ output: SoundOutputUnderTest, _ body: (SoundStage) async throws -> Void) async throws {
        let root = NSTemporaryDirectory() + "mediaroute-sound-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        try await withTearDown {
            let stage = try await start(output, root: root)
            try await withTearDown {
                try await body(stage)
            } tearDown: {
                await stage.server?.stop()
            }
        } tearDown: {
            try? FileManager.default.removeItem(atPath: root)
        }
    }

    private static func start(_ output: SoundOutputUnderTest, root: String) async throws -> SoundStage {
        switch output {
        case .pulseAudio(let audioOutput):
            return try await serverStage(PrivatePulseAudio(), audioOutput: audioOutput, destination: "ALSA device \"pulse\"", root: root)
        case .pipeWire(let audioOutput):
            return try await serverStage(PrivatePipeWire(), audioOutput: audioOutput, destination: "a PipeWire stream", root: root)
        case .alsaFile:
            // The configuration's own devices added to ALSA's (ALSA_CONFIG_PATH replaces its list).
            let heard = root + "/card.raw"
            try """
            pcm.\(alsaDevice) { type file slave.pcm "null" file "\(heard)" format "raw" }
            """.write(toFile: root + "/asound.conf", atomically: true, encoding: .utf8)
            return SoundStage(arguments: ["--audio-output", "alsa", "--alsa-device", alsaDevice],
                              environment: ["ALSA_CONFIG_PATH": "/usr/share/alsa/alsa.conf:\(root)/asound.conf"],
                              announcement: "sound to alsa (ALSA device \"\(alsaDevice)\")", server: nil, heardPath: heard)
        }
    }

    /// `destination`: how the receiver names where the server's output plays.
    private static func serverStage(_ server: some PrivateSoundServer, audioOutput: String, destination: String, root: String) -> SoundStage {
        SoundStage(arguments: ["--audio-output", audioOutput], environment: server.environment,
                   announcement: "sound to \(type(of: server).audioOutput) (\(destination))", server: server, heardPath: root + "/heard.wav")
    }

    /// Starts hearing what plays (a server's monitor is recorded from now on; the ALSA device's
    /// file is what its last stream wrote).
    func startHearing() async throws {
        guard let server else { return }
        let started = try await server.record(to: heardPath)
        recorder.withLock { $0 = started }
    }

    /// What was heard, as 48 kHz interleaved stereo.
    func heard() async throws -> [Float] {
        guard let server else {
            let data = try Data(contentsOf: URL(fileURLWithPath: heardPath))
            return data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        }
        if let recording = recorder.withLock({ $0.take() }) { await server.finish(recording) }
        return try HeardTone.samples(wav: heardPath)
    }
}
