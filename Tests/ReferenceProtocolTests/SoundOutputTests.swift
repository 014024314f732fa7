@testable import AVSystemRouting
import Foundation
import MediaCodecs
import MediaDevice
import MediaRouteIPC
@testable import MediaRouteSupervisor
import PrivateDaemons
import Testing
import TestSupport

/// The receiver makes sound on each output it knows, started by the test: a headless PulseAudio
/// (reached through ALSA's `pulse` device) and a headless PipeWire with wireplumber (a PipeWire
/// stream), each with a null sink whose monitor is recorded, as on a desktop; and, for
/// `--audio-output alsa` with no sound card here, ALSA's file plugin writing what it is given
/// (`SoundStage`). What was heard is
/// compared with what was sent: the tone's frequency, its level, its length, no gaps.
@Suite("Reference receiver: sound on a real sound server", .serialized, .timeLimit(.minutes(3)))
struct SoundOutputTests {
    /// Runs `body` with a test bed and `output`, and stops both.
    private func withSoundOutput(_ output: SoundOutputUnderTest, _ body: (SoundStage, ReferenceTestBed) async throws -> Void) async throws {
        try await SoundStage.run(output) { stage in
            try await ReferenceTestBed.run { bed in try await body(stage, bed) }
        }
    }

    /// The receiver on `stage`'s output, announced and listed, having said which output it took.
    private func receiver(on stage: SoundStage, _ bed: ReferenceTestBed) async throws -> ReceiverProcess {
        let receiver = try await bed.listedReceiver(arguments: ["--auth", "none"] + stage.arguments, environment: stage.environment)
        try await receiver.waitFor(stage.announcement)
        return receiver
    }

    @Test(arguments: SoundOutputUnderTest.all)
    func aURLPlaysAtTheReceiversVolume(_ output: SoundOutputUnderTest) async throws {
        try await withSoundOutput(output) { stage, bed in
            try await stage.startHearing()
            _ = try await receiver(on: stage, bed)
            try await bed.activate("Den TV") { _ in nil }
            #expect(try await bed.supervisor.volume("Den TV", .set(0.5)).volume == 0.5)
            // tone.wav: 4 s of 440 Hz (ffmpeg's sine, at 0.088 of full scale on each channel).
            let source = try WAVReader(path: bed.harness.root + "/media/tone.wav")
            let sourcePeak = source.read(frames: source.frames).map(abs).max() ?? 0
            _ = try await bed.supervisor.startSession("Den TV", url: bed.media.url("tone.wav"))
            try await bed.harness.waitUntil("played to the end", seconds: 15) { await bed.playback("Den TV")?.state == .ended }
            let heard = HeardTone(samples: try await stage.heard())
            print("URL on \(output.testDescription): \(heard)")
            #expect(abs(heard.frequency - 440) < 1, "\(heard)")
            // At volume 0.5: half of the file's level.
            #expect(abs(heard.peak - sourcePeak / 2) < 0.01, "\(heard), the file's peak \(sourcePeak)")
            #expect(abs(heard.seconds - 4) < 0.25, "\(heard)")
            #expect(heard.longestGap <= 10, "\(heard)")
        }
    }

    /// `auto` takes PipeWire when its socket is the only server's there.
    @Test(arguments: SoundOutputUnderTest.all + [.pipeWire(audioOutput: "auto")])
    func realtimeAudioPlaysAtTheReceiversVolume(_ output: SoundOutputUnderTest) async throws {
        try #require(ProcessInfo.processInfo.environment["PULSE_SERVER"] == nil, "the tests choose the sound server; PULSE_SERVER would name another")
        try await withSoundOutput(output) { stage, bed in
            try await stage.startHearing()
            let app = bed.app()
            let observer = AppObserver()
            #expect(app.addObserver(observer))
            let receiver = try await receiver(on: stage, bed)
            try await bed.activate("Den TV") { _ in nil }
            try await bed.harness.waitUntil("app has the route") { await MainActor.run { observer.route != nil } }
            let route = try #require(await MainActor.run { observer.route })
            #expect(try await bed.supervisor.volume("Den TV", .set(0.8)).volume == 0.8)
            let stream = try await route.startAudioStream()

            // Three seconds of 1 kHz at half of full scale, in 20 ms records at real-time pace.
            let start = ContinuousClock.now
            for record in 0..<150 {
                let samples = (0..<960).flatMap { frame -> [Float] in
                    let value = Float(0.5 * sin(2 * Double.pi * 1000 * Double(record * 960 + frame) / 48_000))
                    return [value, value]
                }
                #expect(try samples.withUnsafeBufferPointer { try stream.write($0) })
                try await Task.sleep(until: start + .milliseconds(20 * (record + 1)))
                if record == 100 { receiver.press("status") }
            }
            // While it plays, the console's status shows the stream's playout buffer.
            try await receiver.waitFor("stream r1: ")
            let status = try #require(receiver.console.lastLine(startingWith: "stream r1: "))
            #expect(status.contains(" underruns, ") && status.contains(" frames concealed ") && status.contains("for a target of "), "\(status)")
            try await waitUntil("the driver read every record") { stream.statistics.recordsRead == stream.statistics.recordsWritten }
            try await stream.stop()
            try await receiver.waitFor("stream r1 ended: ")
            let heard = HeardTone(samples: try await stage.heard())
            let ended = try #require(receiver.console.lastLine(startingWith: "stream r1 ended: "))
            #expect(ended.contains("150 packets, 0 lost") && ended.contains(" underruns, "), "\(ended)")

            print("real-time on \(output.testDescription): \(heard); 2 s in: \(status); \(ended)" + receiver.output.split(separator: "\n").filter { $0.contains("stalled") }.map { "\n  " + $0 }.joined())
            // Exact, but for what the playout buffer plays faster or slower to hold its target
            // (0.5 %, up to 2 % for a while when a busy sound server stalled and left it a backlog).
            #expect(abs(heard.frequency - 1000) < 10, "\(heard)")
            // At volume 0.8: 0.4 of full scale.
            #expect(abs(heard.peak - 0.4) < 0.05, "\(heard)")
            // All of it but what came while a sound server started the device (PulseAudio: 0.1-0.35 s, skipped).
            #expect(heard.seconds > 2.6 && heard.seconds < 3.1, "\(heard)")
            #expect(heard.longestGap <= 10, "\(heard)")
        }
    }

    @Test func anOutputThatCannotPlaySaysWhyAtStart() async throws {
        let root = NSTemporaryDirectory() + "mediaroute-sound-\(getpid())-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let environment = ProcessInfo.processInfo.environment.merging(["PULSE_SERVER": "unix:\(root)/no-server"]) { _, new in new }
        let refused = try await ChildOutput.run(DaemonHarness.binary("mediaroute-receiver"), ["--name", "Mute TV", "--state-dir", root, "--audio-output", "pulse"],
                                                environment: environment.map { "\($0.key)=\($0.value)" }, timeout: .seconds(20))
        #expect(refused.termination != .exited(0))
        #expect(refused.standardError.contains("--audio-output pulse: ALSA cannot open the playback device \"pulse\": Connection refused (it needs libasound2-plugins and a PulseAudio"),
                "\(refused.standardError)")
        // PipeWire with no server where its clients look.
        try FileManager.default.createDirectory(atPath: root + "/runtime", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let bare = ProcessInfo.processInfo.environment.merging(["XDG_RUNTIME_DIR": root + "/runtime", "PIPEWIRE_RUNTIME_DIR": root + "/runtime"]) { _, new in new }
        let missing = try await ChildOutput.run(DaemonHarness.binary("mediaroute-receiver"), ["--name", "Mute TV", "--state-dir", root, "--audio-output", "pipewire"],
                                                environment: bare.map { "\($0.key)=\($0.value)" }, timeout: .seconds(20))
        #expect(missing.termination != .exited(0))
        #expect(missing.standardError.contains("--audio-output pipewire: no PipeWire server is running: nothing at \(root)/runtime/pipewire-0; start pipewire and its session manager, wireplumber, or choose another --audio-output"),
                "\(missing.standardError)")
        // A PipeWire server without its session manager: nothing would link the stream to a sink.
        let unlinked = try await PrivatePipeWire(sessionManager: false)
        try await withTearDown {
            let environment = ProcessInfo.processInfo.environment.merging(unlinked.environment) { _, new in new }
            let refused = try await ChildOutput.run(DaemonHarness.binary("mediaroute-receiver"), ["--name", "Mute TV", "--state-dir", root, "--audio-output", "pipewire"],
                                                    environment: environment.map { "\($0.key)=\($0.value)" }, timeout: .seconds(30))
            #expect(refused.termination != .exited(0))
            #expect(refused.standardError.contains("--audio-output pipewire: the PipeWire server at \(unlinked.runtimeDirectory)/pipewire-0 cannot play: nothing linked its stream to a sink within 5 s (is its session manager, wireplumber, running, and is there a sink?)"),
                    "\(refused.standardError)")
        } tearDown: {
            await unlinked.stop()
        }
        let unknown = try await ChildOutput.run(DaemonHarness.binary("mediaroute-receiver"), ["--name", "Mute TV", "--state-dir", root, "--audio-output", "loud"], timeout: .seconds(20))
        #expect(unknown.standardError.contains("--audio-output must be one of auto, pulse, pipewire, alsa, null, not \"loud\""), "\(unknown.standardError)")
    }

    /// On the sound servers (the ALSA stand-in's file starts again at each opening of the device).
    @Test(arguments: SoundOutputUnderTest.servers)
    func pauseSeekAndSpeedAreHeard(_ output: SoundOutputUnderTest) async throws {
        try await withSoundOutput(output) { stage, bed in
            // 440 Hz for 2 s, then 880 Hz for 2 s.
            try await MediaFileServer.makeTones(at: bed.harness.root + "/media/two.wav", [(440, 2), (880, 2)], title: "Two Tones")
            try await stage.startHearing()
            _ = try await receiver(on: stage, bed)
            try await bed.activate("Den TV") { _ in nil }
            _ = try await bed.supervisor.startSession("Den TV", url: bed.media.url("two.wav"))
            try await bed.harness.waitUntil("half a second played") { await bed.playback("Den TV")?.position ?? 0 >= 0.5 }
            _ = try await bed.supervisor.setPlayback("Den TV", PlaybackChanges(isPlaying: false))
            try await bed.harness.waitUntil("paused") { await bed.playback("Den TV")?.state == .paused }
            // What a pause sounds like: nothing, for as long as it lasts.
            try await Task.sleep(for: .milliseconds(600))
            // The second tone, from its start, at twice the speed: 1 s of 880 Hz (atempo keeps the pitch).
            _ = try await bed.supervisor.setPlayback("Den TV", PlaybackChanges(position: 2, speed: 2, isPlaying: true))
            try await bed.harness.waitUntil("played to the end", seconds: 15) { await bed.playback("Den TV")?.state == .ended }

            let samples = try await stage.heard()
            let left = stride(from: 0, to: samples.count, by: 2).map { Double(samples[$0]) }
            // Loud runs of 5 ms blocks, split by at least 100 ms of silence.
            var runs: [Range<Int>] = [], quiet = 0, current: Int?
            for (index, start) in stride(from: 0, to: left.count - 240, by: 240).enumerated() {
                var energy = 0.0
                for sample in left[start..<(start + 240)] { energy += sample * sample }
                if (energy / 240).squareRoot() > 0.01 {
                    if current == nil { current = index }
                    quiet = 0
                } else if let began = current {
                    quiet += 1
                    if quiet == 20 { runs.append(began..<(index - 19)); current = nil }
                }
            }
            if let began = current { runs.append(began..<(left.count / 240)) }
            let described = runs.map { run in
                let tone = Array(left[(run.lowerBound * 240)..<(run.upperBound * 240)])
                return (seconds: Double(run.count) * 0.005, frequency: ToneAnalysis.frequency(of: tone, sampleRate: 48_000))
            }
            print("pause, seek, speed on \(output.testDescription): \(described)")
            #expect(described.count == 2, "two runs of sound around the pause: \(described)")
            guard described.count == 2 else { return }
            #expect(abs(described[0].frequency - 440) < 2 && described[0].seconds >= 0.4 && described[0].seconds < 1.2, "\(described[0])")
            #expect(abs(described[1].frequency - 880) < 4 && abs(described[1].seconds - 1) < 0.2, "\(described[1])")
        }
    }
}
