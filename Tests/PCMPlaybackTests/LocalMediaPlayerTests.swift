import Foundation
import Glibc
import MediaDevice
import MediaRouteIPC
@testable import PCMPlayback
import PrivateDaemons
import Synchronization
import Testing
import TestSupport

/// The local player against real ffmpeg and a real HTTP server on loopback.
@Suite(.onAThreadOfItsOwn) struct LocalMediaPlayerTests {
    static let format = PCMFormat(sampleRate: 48000, channels: 2)

    // MARK: Decoding and pacing

    @Test func playsAToneToItsEnd() async throws {
        try await withServedMedia { server, directory in
            try await MediaFileServer.makeTone(at: directory + "/tone.wav", seconds: 3, title: "Tone")
            let opened = ContinuousClock.now
            let player = try await LocalMediaPlayer.open(url: URL(string: server.url("tone.wav"))!, format: Self.format)
            let probed = ContinuousClock.now
            let events = EventLog(player)
            #expect(player.duration.map { abs($0 - 3) < 0.01 } == true)
            #expect(player.metadata.title == "Tone")
            let first = readPCM(player, frames: 480)
            print("URL to first PCM: \((ContinuousClock.now - opened).milliseconds) ms, of which probing \((probed - opened).milliseconds) ms")
            let rest = readPCM(player, frames: nil)
            let samples = first.samples + rest.samples
            #expect(rest.ended)
            #expect(abs(samples.count / 2 - 3 * 48000) <= 48)
            #expect(abs(frequency(samples) - 440) <= 2)
            #expect(events.all == [.started, .ended])
            #expect(player.failure == nil)
        }
    }

    @Test func playsAFileURL() async throws {
        try await withServedMedia { _, directory in
            try await MediaFileServer.makeTone(at: directory + "/tone file.wav", seconds: 1, title: "File")
            let player = try await LocalMediaPlayer.open(url: URL(fileURLWithPath: directory + "/tone file.wav"), format: PCMFormat(sampleRate: 44100, channels: 1))
            let read = readPCM(player, frames: nil, channels: 1)
            #expect(read.ended)
            #expect(abs(read.samples.count - 44100) <= 48)
            #expect(abs(frequency(read.samples, channels: 1, rate: 44100) - 440) <= 2)
        }
    }

    @Test func positionIsWhatWasRead() async throws {
        try await withServedMedia { server, directory in
            try await MediaFileServer.makeTone(at: directory + "/tone.wav", seconds: 5, title: "Tone")
            let player = try await LocalMediaPlayer.open(url: URL(string: server.url("tone.wav"))!, format: Self.format)
            #expect(player.position == 0)
            _ = readPCM(player, frames: 48000)  // as fast as ffmpeg goes: pacing is the reader's
            #expect(abs(player.position - 1.0) < 0.001)
            _ = readPCM(player, frames: 24000)
            #expect(abs(player.position - 1.5) < 0.001)
        }
    }

    /// Unread, ffmpeg fills the pipe and then waits in `write`: it decodes no further ahead.
    @Test func decodesNoFasterThanItIsRead() async throws {
        try await withServedMedia { server, directory in
            try await MediaFileServer.makeTone(at: directory + "/long.wav", seconds: 30, title: "Long")
            let player = try await LocalMediaPlayer.open(url: URL(string: server.url("long.wav"))!, format: Self.format)
            let pid = try #require(player.decoderPID)
            // Another read end of ffmpeg's output pipe, to ask how full it is (never read from).
            let pipe = open("/proc/\(pid)/fd/1", O_RDONLY | O_NONBLOCK | O_CLOEXEC)
            try #require(pipe >= 0)
            defer { close(pipe) }
            let capacity = fcntl(pipe, 1032 /* F_GETPIPE_SZ */)
            var queued: Int32 = 0
            let deadline = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < deadline {
                _ = ioctl(pipe, UInt(FIONREAD), &queued)
                if queued == capacity { break }
                try await Task.sleep(for: .milliseconds(5))
            }
            #expect(queued == capacity, "the pipe never filled: \(queued) of \(capacity) bytes")
            // Full, and ffmpeg still there, asleep in a write to it: 30 s of audio would be 5.8 MB.
            let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
            let fields = stat[stat.range(of: ") ")!.upperBound...].split(separator: " ")
            #expect(fields.first == "S")
            let wchan = (try? String(contentsOfFile: "/proc/\(pid)/wchan", encoding: .utf8)) ?? ""
            #expect(wchan.hasSuffix("pipe_write") || wchan == "0" || wchan.isEmpty, "ffmpeg waits in \(wchan)")
            #expect(player.position == 0)
            // And it carries on from there once read.
            let read = readPCM(player, frames: 2 * 48000)
            #expect(read.samples.count == 2 * 48000 * 2)
            #expect(player.decoderPID == pid)
        }
    }

    // MARK: Seeking, speed, gain

    // Seeking and speed read a file URL: the test's HTTP server (Python's http.server) does not
    // answer Range requests, and ffmpeg seeking over HTTP without them gets the wrong bytes.
    @Test func seekPlaysFromThere() async throws {
        try await withServedMedia { _, directory in
            try await makeSteps(at: directory + "/steps.wav")
            let player = try await LocalMediaPlayer.open(url: URL(fileURLWithPath: directory + "/steps.wav"), format: Self.format)
            #expect(abs(frequency(readPCM(player, frames: 24000).samples) - 300) <= 2)
            player.seek(to: 2.0)
            #expect(player.position == 2.0)
            #expect(abs(frequency(readPCM(player, frames: 24000).samples) - 600) <= 2)
            #expect(abs(player.position - 2.5) < 0.001)
            player.seek(to: 1.0)
            let back = readPCM(player, frames: 48000)
            #expect(abs(frequency(back.samples) - 300) <= 2)
            // From 1 s, exactly 1 s of the low tone is left, then the high one.
            let rest = readPCM(player, frames: nil)
            #expect(rest.ended)
            #expect(abs(frequency(rest.samples) - 600) <= 2)
            #expect(abs(rest.samples.count / 2 - 2 * 48000) <= 48)
        }
    }

    @Test func seekPastTheEndEnds() async throws {
        try await withServedMedia { _, directory in
            try await MediaFileServer.makeTone(at: directory + "/tone.wav", seconds: 2, title: "Tone")
            let player = try await LocalMediaPlayer.open(url: URL(fileURLWithPath: directory + "/tone.wav"), format: Self.format)
            let events = EventLog(player)
            let pid = try #require(player.decoderPID)
            player.seek(to: 99)
            #expect(events.all == [.ended])
            #expect(player.position == 2)
            #expect(readPCM(player, frames: nil).ended)
            #expect(kill(pid, 0) == -1 && errno == ESRCH)
            // Sought back, it plays again.
            player.seek(to: 1.5)
            let read = readPCM(player, frames: nil)
            #expect(read.ended)
            #expect(abs(read.samples.count / 2 - 24000) <= 48)
        }
    }

    @Test func doubleSpeedPlaysTwoSecondsInOne() async throws {
        try await withServedMedia { _, directory in
            try await makeSteps(at: directory + "/steps.wav")
            let player = try await LocalMediaPlayer.open(url: URL(fileURLWithPath: directory + "/steps.wav"), format: Self.format)
            try player.setSpeed(2.0)
            let first = readPCM(player, frames: 48000)  // 1 s of PCM: 2 s of the file
            #expect(abs(player.position - 2.0) < 0.001)
            #expect(abs(frequency(first.samples) - 300) <= 3)  // atempo keeps the pitch
            let rest = readPCM(player, frames: nil)
            #expect(rest.ended)
            #expect(abs(rest.samples.count / 2 - 48000) <= 960)
            #expect(abs(frequency(rest.samples) - 600) <= 3)
            #expect(throws: LocalPlaybackError.self) { try player.setSpeed(3) }
            do throws(LocalPlaybackError) {
                try player.setSpeed(0.25)
            } catch {
                #expect(error.kind == .outOfRange)
                #expect(error.description.contains("0.25"))
            }
            #expect(player.speed == 2)
        }
    }

    @Test func volumeScalesAndMuteSilences() async throws {
        try await withServedMedia { server, directory in
            try await MediaFileServer.makeTone(at: directory + "/tone.wav", seconds: 3, title: "Tone")
            let player = try await LocalMediaPlayer.open(url: URL(string: server.url("tone.wav"))!, format: Self.format)
            let full = peak(readPCM(player, frames: 9600).samples)
            #expect(full > 1000)
            player.volume = 0.5
            let half = peak(readPCM(player, frames: 9600).samples)
            #expect(abs(Double(half) - Double(full) / 2) <= 2)
            player.isMuted = true
            #expect(peak(readPCM(player, frames: 9600).samples) == 0)
            player.isMuted = false
            player.volume = 1
            #expect(peak(readPCM(player, frames: 9600).samples) == full)
        }
    }

    // MARK: What cannot be played

    @Test func refusesWhatCannotBePlayed() async throws {
        try await withServedMedia { server, directory in
            try "not media\n".write(toFile: directory + "/notes.txt", atomically: true, encoding: .utf8)
            let refusedPort = try unusedPort()
            let cases: [(String, LocalPlaybackError.Kind, String)] = [
                (server.url("missing.wav"), .unreachable, "404"),
                (server.url("notes.txt"), .notMedia, "not media"),
                ("ftp://127.0.0.1/tone.wav", .unsupportedURL, "ftp URLs are not supported"),
                ("http://127.0.0.1:\(refusedPort)/tone.wav", .unreachable, "connection refused"),
                ("file://" + directory + "/absent.wav", .unreachable, "no such file"),
            ]
            for (url, kind, words) in cases {
                do throws(LocalPlaybackError) {
                    _ = try await LocalMediaPlayer.open(url: URL(string: url)!, format: Self.format)
                    Issue.record("\(url) opened")
                } catch {
                    #expect(error.kind == kind, "\(error)")
                    #expect(error.description.contains(url.hasPrefix("file") ? directory + "/absent.wav" : url), "\(error)")
                    #expect(error.description.contains(words), "\(error)")
                }
            }
        }
    }

    @Test func aServerThatTricklesIsRefusedInTime() async throws {
        // A listening socket that never answers: the probe must give up by its deadline.
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        try #require(listener >= 0)
        defer { close(listener) }
        var address = sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: 0, sin_addr: in_addr(s_addr: inet_addr("127.0.0.1")), sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        try withUnsafeMutablePointer(to: &address) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                try #require(bind(listener, $0, length) == 0 && listen(listener, 4) == 0 && getsockname(listener, $0, &length) == 0)
            }
        }
        let url = "http://127.0.0.1:\(UInt16(bigEndian: address.sin_port))/slow.wav"
        do {
            _ = try await LocalMediaPlayer.open(url: URL(string: url)!, format: Self.format, probeTimeout: .seconds(1))
            Issue.record("\(url) opened")
        } catch {
            // The sentence says our deadline ended it (the listener would never answer).
            #expect(error.description.contains(url) && error.description.contains("longer than"), "\(error)")
        }
    }

    @Test func aServerGoneMidStreamEndsWithTheReason() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Long enough that what the server wrote before dying cannot all sit in socket buffers.
        try await MediaFileServer.makeTone(at: directory + "/long.wav", seconds: 120, title: "Long")
        let server = try await MediaFileServer(directory: directory)
        let url = server.url("long.wav")
        let player: LocalMediaPlayer
        do {
            player = try await LocalMediaPlayer.open(url: URL(string: url)!, format: Self.format)
        } catch {
            await server.stop()
            throw error
        }
        let events = EventLog(player)
        #expect(readPCM(player, frames: 48000).samples.count == 96000)
        await server.stop()
        let rest = readPCM(player, frames: nil, deadline: .seconds(30))
        #expect(rest.ended)
        #expect(player.position < 100)
        let failure = try #require(player.failure)
        #expect(failure.contains(url) && failure.contains("the server stopped sending"), "\(failure)")
        #expect(events.all == [.started, .failed(failure)])
    }

    // MARK: Stopping

    @Test func stopKillsAndReapsFFmpeg() async throws {
        try await withServedMedia { server, directory in
            try await MediaFileServer.makeTone(at: directory + "/tone.wav", seconds: 30, title: "Tone")
            let before = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
            let player = try await LocalMediaPlayer.open(url: URL(string: server.url("tone.wav"))!, format: Self.format)
            _ = readPCM(player, frames: 4800)
            let pid = try #require(player.decoderPID)
            player.stop()
            // Reaped, not a zombie: the PID no longer exists at all.
            #expect(kill(pid, 0) == -1 && errno == ESRCH)
            #expect(readPCM(player, frames: nil).ended)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory).sorted() == before)
            // A player dropped without stop() reaps its ffmpeg too.
            var other: LocalMediaPlayer? = try await LocalMediaPlayer.open(url: URL(string: server.url("tone.wav"))!, format: Self.format)
            let otherPID = try #require(other?.decoderPID)
            other = nil
            #expect(kill(otherPID, 0) == -1 && errno == ESRCH)
        }
    }
}

// MARK: Helpers

/// The events a player reported, in order.
final class EventLog: Sendable {
    private let events = Mutex<[LocalMediaPlayer.Event]>([])
    init(_ player: LocalMediaPlayer) {
        player.onEvent = { [self] event in events.withLock { $0.append(event) } }
    }
    var all: [LocalMediaPlayer.Event] { events.withLock { $0 } }
}

func temporaryDirectory() throws -> String {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("local-player-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    return directory
}

/// Runs `body` with a directory served over HTTP on loopback; stops the server and removes the directory after.
func withServedMedia(_ body: (MediaFileServer, String) async throws -> Void) async throws {
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let server = try await MediaFileServer(directory: directory)
    do {
        try await body(server, directory)
    } catch {
        await server.stop()
        throw error
    }
    await server.stop()
}

/// 2 s of 300 Hz then 2 s of 600 Hz, stereo 48 kHz: positions told apart by frequency.
func makeSteps(at path: String) async throws {
    let output = try await ChildOutput.run("/usr/bin/ffmpeg", ["-hide_banner", "-loglevel", "error", "-y",
                                                               "-f", "lavfi", "-i", "sine=frequency=300:sample_rate=48000:duration=2",
                                                               "-f", "lavfi", "-i", "sine=frequency=600:sample_rate=48000:duration=2",
                                                               "-filter_complex", "[0:a][1:a]concat=n=2:v=0:a=1", "-ac", "2", path])
    try #require(output.termination == .exited(0), "\(output.standardError)")
}

/// Reads `frames` frames, or everything to the end if nil, as fast as the player gives them.
func readPCM(_ player: LocalMediaPlayer, frames wanted: Int?, channels: Int = 2, deadline: Duration = .seconds(20)) -> (samples: [Int16], ended: Bool) {
    var samples: [Int16] = []
    let end = ContinuousClock.now + deadline
    var buffer = [Int16](repeating: 0, count: 4800 * channels)
    while ContinuousClock.now < end {
        let room = wanted.map { min(4800, $0 - samples.count / channels) } ?? 4800
        if room == 0 { return (samples, false) }
        let result = buffer.withUnsafeMutableBufferPointer { pointer in
            player.read(into: UnsafeMutableBufferPointer(rebasing: pointer[0..<room * channels]), waitingUpTo: .milliseconds(500))
        }
        switch result {
        case .frames(let frames): samples += buffer[0..<frames * channels]
        case .starved: continue
        case .ended: return (samples, true)
        }
    }
    return (samples, false)
}

/// The frequency of the first channel, from its rising zero crossings.
func frequency(_ samples: [Int16], channels: Int = 2, rate: Int = 48000) -> Double {
    var crossings: [Int] = []
    var previous = Int16(0)
    for (index, frame) in stride(from: 0, to: samples.count, by: channels).enumerated() {
        if previous < 0 && samples[frame] >= 0 { crossings.append(index) }
        previous = samples[frame]
    }
    guard crossings.count >= 2 else { return 0 }
    return Double(crossings.count - 1) * Double(rate) / Double(crossings.last! - crossings.first!)
}

func peak(_ samples: [Int16]) -> Int { samples.map { abs(Int($0)) }.max() ?? 0 }

/// A loopback port nothing listens on (bound, then closed).
func unusedPort() throws -> UInt16 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    try #require(fd >= 0)
    defer { close(fd) }
    var address = sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: 0, sin_addr: in_addr(s_addr: inet_addr("127.0.0.1")), sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    try withUnsafeMutablePointer(to: &address) { pointer in
        try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            try #require(bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0)
        }
    }
    return UInt16(bigEndian: address.sin_port)
}

// MARK: LocalPlayback

/// The driver's side of `SampleOutput`: what a sender would obey.
@MainActor final class TestOutput: SampleOutput {
    var isPaused = false
    var volume: Float = 1
    var isMuted = false
    var jumps = 0
    func sourceJumped(to position: Double) { jumps += 1 }
}

@MainActor final class ChangeCount {
    var count = 0
}

/// Reads off the main actor, as a device's sender does, on a thread of its own (the reads block).
func readElsewhere(_ player: LocalMediaPlayer, frames: Int?) async throws -> (samples: [Int16], ended: Bool) {
    try await onThreadOfItsOwn { readPCM(player, frames: frames) }
}

/// Waits for `condition`, checking whenever the main actor is free, for up to `limit`.
@MainActor func eventually(within limit: Duration = .seconds(10), _ condition: @MainActor () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + limit
    while !condition() {
        guard ContinuousClock.now < deadline else { return false }
        try? await Task.sleep(for: .milliseconds(2))
    }
    return true
}

@Suite @MainActor struct LocalPlaybackTests {
    @Test func statesFollowThePlayerAndTheOutput() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await MediaFileServer.makeTone(at: directory + "/tone.wav", seconds: 3, title: "Tone")
        let player = try await LocalMediaPlayer.open(url: URL(fileURLWithPath: directory + "/tone.wav"), format: LocalMediaPlayerTests.format)
        defer { player.stop() }
        let output = TestOutput()
        let changes = ChangeCount()
        let playback = LocalPlayback(player: player, output: output, onChange: { changes.count += 1 })
        #expect(playback.state == .loading && playback.isPlaying)
        #expect(playback.timeRange == 0...3)
        #expect(playback.metadata.title == "Tone")
        #expect(playback.audioOptions.isEmpty && playback.subtitleOptions.isEmpty)

        _ = try await readElsewhere(player, frames: 4800)
        #expect(await eventually { playback.state == .playing })
        #expect(changes.count == 1)
        #expect(abs(playback.currentPlaybackPosition - 0.1) < 0.001)

        playback.isPlaying = false
        #expect(output.isPaused && playback.state == .paused && !playback.isPlaying)
        playback.isPlaying = true  // the samples are there: playing again at once
        #expect(!output.isPaused && playback.state == .playing)
        playback.isPlaying = false
        playback.currentPlaybackPosition = 2.5
        #expect(playback.currentPlaybackPosition == 2.5 && playback.state == .paused)
        #expect(output.jumps == 1)  // the device drops what it held from before the seek
        playback.isPlaying = true
        #expect(!output.isPaused && playback.state == .loading)

        let rest = try await readElsewhere(player, frames: nil)
        #expect(rest.ended && abs(rest.samples.count / 2 - 24000) <= 48)
        #expect(await eventually { playback.state == .ended })
        #expect(output.isPaused && !playback.isPlaying)
        #expect(abs(playback.currentPlaybackPosition - 3) < 0.001)

        // Playing after the end starts again from the beginning.
        playback.isPlaying = true
        #expect(playback.currentPlaybackPosition == 0 && playback.state == .loading && !output.isPaused)
        _ = try await readElsewhere(player, frames: 4800)
        #expect(await eventually { playback.state == .playing })

        playback.volume = 0.25
        playback.isMuted = true
        #expect(output.volume == 0.25 && output.isMuted && playback.volume == 0.25 && playback.isMuted)

        playback.playbackSpeed = 3
        #expect(playback.playbackSpeed == 1 && playback.refusal?.kind == .outOfRange)
        playback.playbackSpeed = 1.5
        #expect(playback.playbackSpeed == 1.5 && playback.refusal == nil)

        playback.currentPlaybackPosition = 10
        #expect(playback.state == .ended && output.isPaused)
    }

    @Test func aFailureIsItsState() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await MediaFileServer.makeTone(at: directory + "/long.wav", seconds: 120, title: "Long")
        let server = try await MediaFileServer(directory: directory)
        let player: LocalMediaPlayer
        do {
            player = try await LocalMediaPlayer.open(url: URL(string: server.url("long.wav"))!, format: LocalMediaPlayerTests.format)
        } catch {
            await server.stop()
            throw error
        }
        let output = TestOutput()
        let changes = ChangeCount()
        let playback = LocalPlayback(player: player, output: output, onChange: { changes.count += 1 })
        _ = try await readElsewhere(player, frames: 4800)
        await server.stop()
        #expect(try await readElsewhere(player, frames: nil).ended)
        #expect(await eventually { playback.state == .failed })
        #expect(playback.failure?.contains(server.url("long.wav")) == true)
        #expect(output.isPaused && !playback.isPlaying)
        #expect(changes.count == 2)  // playing, then failed
    }
}
