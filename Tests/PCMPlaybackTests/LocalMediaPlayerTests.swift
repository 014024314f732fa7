import Foundation
import Glibc
import MediaRouteIPC
import PCMPlayback
import PrivateDaemons
import Synchronization
import Testing
import TestSupport

/// The local player against real ffmpeg and a real HTTP server on loopback.
@Suite("Local player: a URL as PCM for sample-only devices", .serialized, .timeLimit(.minutes(2)))
struct LocalMediaPlayerTests {
    static let format = PCMFormat(sampleRate: 48_000, channels: 2)

    /// A server with `tone.wav` (4 s of 440 Hz) and `steps.wav` (2 s of 300 Hz, then 2 s of 600 Hz).
    static func withMedia(_ body: (MediaFileServer) async throws -> Void) async throws {
        let directory = NSTemporaryDirectory() + "mediaroute-player-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await MediaFileServer.makeTone(at: directory + "/tone.wav", seconds: 4, title: "Test Tone")
        let steps = try await ChildOutput.run("/usr/bin/ffmpeg", ["-hide_banner", "-loglevel", "error", "-y",
            "-f", "lavfi", "-i", "sine=frequency=300:sample_rate=48000:duration=2", "-f", "lavfi", "-i", "sine=frequency=600:sample_rate=48000:duration=2",
            "-filter_complex", "[0][1]concat=n=2:v=0:a=1", "-ac", "2", directory + "/steps.wav"])
        #expect(steps.termination == .exited(0), "\(steps.standardError)")
        try Data("not media at all".utf8).write(to: URL(fileURLWithPath: directory + "/notes.txt"))
        let server = try await MediaFileServer(directory: directory)
        do { try await body(server) } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    /// Reads `seconds` of PCM as a device's sender would (as fast as it comes, here).
    static func read(_ player: LocalMediaPlayer, seconds: Double) throws -> [Int16] {
        var samples: [Int16] = []
        var buffer = [Int16](repeating: 0, count: 4096)
        let wanted = Int(seconds * Double(format.sampleRate)) * format.channels
        let deadline = ContinuousClock.now + .seconds(20)
        while samples.count < wanted {
            guard ContinuousClock.now < deadline else { throw TestTimeout(what: "\(seconds) s of PCM (got \(samples.count / 2) frames)") }
            let want = min(buffer.count, wanted - samples.count)
            let result = buffer.withUnsafeMutableBufferPointer { player.read(into: UnsafeMutableBufferPointer(rebasing: $0[0..<want]), waitingUpTo: .milliseconds(100)) }
            switch result {
            case .frames(let frames): samples += buffer[0..<(frames * format.channels)]
            case .starved: if player.hasEnded { return samples }
            case .ended: return samples
            }
        }
        return samples
    }

    @Test func aToneArrivesAsItsPCMAndThePositionIsWhatWasRead() async throws {
        try await Self.withMedia { server in
            let player = try await LocalMediaPlayer.open(url: URL(string: server.url("tone.wav"))!, format: Self.format)
            defer { player.stop() }
            #expect(player.duration == 4 && player.title == "Test Tone")
            let events = Mutex<[LocalMediaPlayer.Event]>([])
            player.onEvent = { event in events.withLock { $0.append(event) } }
            let first = try Self.read(player, seconds: 1)
            #expect(ToneFit.snr(first, channels: 2, sampleRate: 48_000, frequency: 440, skipSeconds: 0) >= 40)
            #expect(abs(player.position - 1.0) < 0.01, "position \(player.position)")
            // The rest, then the end: the event, and nothing more to read.
            let rest = try Self.read(player, seconds: 10)
            let seconds = Double(first.count + rest.count) / 96_000
            #expect(abs(seconds - 4.0) < 0.01, "\(seconds) s read")
            #expect(player.hasEnded && player.failure == nil)
            #expect(events.withLock { $0 } == [.started, .ended])
            #expect(player.position == 4)
        }
    }

    @Test func seekingSpeedAndVolumeChangeWhatIsRead() async throws {
        try await Self.withMedia { server in
            let player = try await LocalMediaPlayer.open(url: URL(string: server.url("steps.wav"))!, format: Self.format)
            defer { player.stop() }
            let start = try Self.read(player, seconds: 0.5)
            #expect(ToneFit.snr(start, channels: 2, sampleRate: 48_000, frequency: 300, skipSeconds: 0) >= 30)
            try player.seek(to: 2.5)
            let later = try Self.read(player, seconds: 0.5)
            #expect(ToneFit.snr(later, channels: 2, sampleRate: 48_000, frequency: 600, skipSeconds: 0.05) >= 30)
            #expect(abs(player.position - 3.0) < 0.01)

            try player.seek(to: 0)
            try player.setSpeed(2)
            _ = try Self.read(player, seconds: 0.5)
            #expect(abs(player.position - 1.0) < 0.02, "at twice the speed, 0.5 s of PCM is 1 s of media: \(player.position)")
            #expect(throws: LocalPlaybackError.self) { try player.setSpeed(3) }

            player.isMuted = true
            let muted = try Self.read(player, seconds: 0.2)
            #expect(muted.allSatisfy { $0 == 0 })
        }
    }

    @Test func whatCannotPlaySaysWhy() async throws {
        try await Self.withMedia { server in
            let cases: [(String, String)] = [
                (server.url("missing.wav"), "404"),
                (server.url("notes.txt"), "cannot play"),
                ("ftp://127.0.0.1/tone.wav", "only http, https and file URLs"),
                ("http://127.0.0.1:9/tone.wav", "Connection refused"),
                ("file:///nonexistent/tone.wav", "there is no readable file"),
            ]
            for (url, expected) in cases {
                let error = await #expect(throws: LocalPlaybackError.self) { try await LocalMediaPlayer.open(url: URL(string: url)!, format: Self.format) }
                #expect(error?.message.contains(expected) == true, "\(url): \(String(describing: error))")
                #expect(error?.message.contains(url) == true || url.hasPrefix("ftp"), "\(url): \(String(describing: error))")
            }
        }
    }

    @Test func stoppingEndsFFmpegAndReading() async throws {
        try await Self.withMedia { server in
            let player = try await LocalMediaPlayer.open(url: URL(string: server.url("tone.wav"))!, format: Self.format)
            let pid = try #require(player.decoderPID)
            #expect(kill(pid, 0) == 0)
            player.stop()
            #expect(kill(pid, 0) != 0, "ffmpeg \(pid) still runs")
            var buffer = [Int16](repeating: 0, count: 64)
            #expect(buffer.withUnsafeMutableBufferPointer { player.read(into: $0, waitingUpTo: .zero) } == .ended)
        }
    }
}
