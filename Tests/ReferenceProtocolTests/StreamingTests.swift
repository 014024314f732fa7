@testable import AVSystemRouting
import Foundation
import MediaCodecs
import MediaDevice
import MediaRouteIPC
@testable import MediaRouteSupervisor
import Testing
import TestSupport

/// Real-time samples end to end: an app writes into a shared-memory ring, the reference driver
/// encodes (libopus, libx264) and sends RTP, the receiver decodes and records, and the recording is
/// compared with what was written.
@Suite("Reference protocol: real-time audio and video", .serialized, .timeLimit(.minutes(3)))
struct StreamingTests {
    /// A receiver recording into `record`, activated, and an app holding its route.
    private func route(_ bed: ReferenceTestBed, record: String, receiverArguments: [String] = []) async throws -> (AVSystemRoute, ReceiverProcess) {
        let app = bed.app()
        let observer = AppObserver()
        #expect(app.addObserver(observer))
        let receiver = try await bed.listedReceiver(arguments: ["--auth", "none", "--record", record] + receiverArguments)
        try await bed.activate("Den TV") { _ in nil }
        try await bed.harness.waitUntil("app has the route") { await MainActor.run { observer.route != nil } }
        return (try #require(await MainActor.run { observer.route }), receiver)
    }

    @Test func aSineSweepComesOutOfTheReceiverAsItWentIn() async throws {
        try await ReferenceTestBed.run { bed in
            let record = bed.harness.root + "/recordings"
            let (route, receiver) = try await route(bed, record: record)
            let stream = try await route.startAudioStream()
            #expect(stream.format == .defaultAudio)

            // Three seconds of a logarithmic sweep, 100 Hz to 8 kHz, written in 20 ms records at real-time pace.
            let rate = 48_000.0, seconds = 3.0, frame = 960
            var sweep = [Float](repeating: 0, count: Int(rate * seconds) * 2)
            var phase = 0.0
            for i in 0..<Int(rate * seconds) {
                let t = Double(i) / rate
                phase += 2 * Double.pi * 100 * pow(80, t / seconds) / rate
                sweep[2 * i] = Float(0.5 * sin(phase))
                sweep[2 * i + 1] = sweep[2 * i]
            }
            let start = ContinuousClock.now
            for chunk in 0..<(Int(rate * seconds) / frame) {
                let written = try sweep.withUnsafeBufferPointer { try stream.write(UnsafeBufferPointer(rebasing: $0[(chunk * frame * 2)..<((chunk + 1) * frame * 2)])) }
                #expect(written)
                try await Task.sleep(until: start + .milliseconds(20 * (chunk + 1)))
            }
            // The driver has encoded and sent a record once it counts it read.
            try await waitUntil("the driver read every record") { stream.statistics.recordsRead == stream.statistics.recordsWritten }
            let statistics = stream.statistics
            #expect(statistics.overruns == 0 && statistics.recordsRead == statistics.recordsWritten)
            // What the driver sent on is about 128 kbit/s of Opus (plus RTP headers).
            let kbps = Double(statistics.consumerOutputBytes) * 8 / seconds / 1000
            #expect((100...180).contains(kbps), "\(kbps) kbit/s")
            try await stream.stop()
            try await receiver.waitFor("stream r1 ended: ")
            #expect(receiver.output.contains("stream r1 ended: 150 packets, 0 lost, 150 frames"), "\(receiver.output)")

            let decoded = try WAVReader(path: record + "/r1.wav")
            #expect(decoded.sampleRate == 48_000 && decoded.channels == 2)
            let samples = decoded.read(frames: decoded.frames)
            let left = stride(from: 0, to: sweep.count, by: 2).map { sweep[$0] }
            let right = stride(from: 0, to: samples.count, by: 2).map { samples[$0] }
            // Seconds of arithmetic: on a thread of its own, not one of the pool's two.
            let (lag, snr) = try await onThreadOfItsOwn { Self.align(left, right) }
            #expect(snr >= 20, "SNR \(snr) dB at a lag of \(lag) samples")
            #expect((0..<960).contains(lag), "Opus's low-delay mode adds a few ms, not \(lag) samples")
        }
    }

    @Test func aVideoTestPatternDecodesFrameForFrame() async throws {
        try await ReferenceTestBed.run { bed in
            let record = bed.harness.root + "/recordings"
            let (route, receiver) = try await route(bed, record: record)
            let (width, height, fps, frames) = (320, 240, 30, 60)
            let stream = try await route.startVideoStream(width: width, height: height, frameRate: fps)
            #expect(FileManager.default.createFile(atPath: bed.harness.root + "/source.yuv", contents: nil))
            let source = try #require(FileHandle(forWritingAtPath: bed.harness.root + "/source.yuv"))
            let pattern = TestPattern(width: width, height: height)
            let start = ContinuousClock.now
            for index in 0..<frames {
                let image = pattern.frame(index)
                source.write(Data(image))
                #expect(try image.withUnsafeBytes { try stream.write(frame: $0) })
                try await Task.sleep(until: start + .milliseconds(1000 * (index + 1) / fps))
            }
            try source.close()
            try await waitUntil("the driver read every frame") { stream.statistics.recordsRead == UInt64(frames) }
            try await stream.stop()
            try await receiver.waitFor("stream r1 ended: ")

            let count = try await ChildOutput.run("/usr/bin/ffprobe", ["-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                                                                        "stream=nb_read_frames,width,height", "-of", "csv=p=0", record + "/r1.h264"])
            #expect(count.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines) == "\(width),\(height),\(frames)", "\(count.standardOutput) \(count.standardError)")
            // Decoded by ffmpeg, compared frame by frame with what was written.
            let decode = try await ChildOutput.run("/usr/bin/ffmpeg", ["-hide_banner", "-loglevel", "error", "-i", record + "/r1.h264", "-f", "rawvideo",
                                                                       "-pix_fmt", "yuv420p", bed.harness.root + "/decoded.yuv"])
            #expect(decode.termination == .exited(0), "\(decode.standardError)")
            let decoded = try Data(contentsOf: URL(fileURLWithPath: bed.harness.root + "/decoded.yuv"))
            let written = try Data(contentsOf: URL(fileURLWithPath: bed.harness.root + "/source.yuv"))
            #expect(decoded.count == written.count)
            let psnr = Self.psnr(decoded, written)
            #expect(psnr >= 30, "PSNR \(psnr) dB")
        }
    }

    @Test func aLostVideoPacketBringsAKeyframeAndThePictureBack() async throws {
        try await ReferenceTestBed.run { bed in
            let record = bed.harness.root + "/recordings"
            // The receiver loses one packet well after the first keyframe; the next natural one would
            // come only after 60 frames, so every frame after the loss needs the requested keyframe.
            let (route, receiver) = try await route(bed, record: record, receiverArguments: ["--drop-video-packet", "25"])
            let (width, height, fps, frames) = (320, 240, 30, 60)
            let stream = try await route.startVideoStream(width: width, height: height, frameRate: fps)
            let pattern = TestPattern(width: width, height: height)
            let start = ContinuousClock.now
            for index in 0..<frames {
                #expect(try pattern.frame(index).withUnsafeBytes { try stream.write(frame: $0) })
                try await Task.sleep(until: start + .milliseconds(1000 * (index + 1) / fps))
            }
            try await waitUntil("the driver read every frame") { stream.statistics.recordsRead == UInt64(frames) }
            try await stream.stop()
            try await receiver.waitFor("stream r1 ended: ")
            #expect(receiver.output.contains("dropped packet 25 on purpose"))
            let keyframes = try await ChildOutput.run("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "frame=key_frame",
                                                                            "-of", "csv=p=0", record + "/r1.h264"])
            let flags = keyframes.standardOutput.split(separator: "\n").map { $0.hasPrefix("1") }
            #expect(flags.filter { $0 }.count >= 2, "a second keyframe after the loss: \(flags)")
            // Only the frames between the loss and the requested keyframe are missing (x264 also cuts
            // to a keyframe at scene changes, but without the request a dozen or more frames go).
            #expect(flags.count >= frames - 8, "\(flags.count) of \(frames) frames decode")
        }
    }

    @Test func aProducerFasterThanTheDeviceOverrunsAndNothingBreaks() async throws {
        try await ReferenceTestBed.run { bed in
            let (route, _) = try await route(bed, record: bed.harness.root + "/recordings")
            let stream = try await route.startAudioStream()
            // Ten seconds of audio in an instant: far more than the ring holds.
            let chunk = [Float](repeating: 0.25, count: 960 * 2)
            var refused = 0
            for _ in 0..<500 where try !chunk.withUnsafeBufferPointer({ try stream.write($0) }) { refused += 1 }
            #expect(refused > 0)
            #expect(stream.statistics.overruns == UInt64(refused))
            // The driver keeps reading, and the stream keeps working.
            try await bed.harness.waitUntil("the driver drains the ring") { stream.statistics.fill == 0 }
            #expect(try chunk.withUnsafeBufferPointer { try stream.write($0) })
            try await stream.stop()
        }
    }

    @Test func aDriverKilledMidStreamEndsItWithTheReasonAndLeavesNoDescriptor() async throws {
        try await ReferenceTestBed.run { bed in
            let (route, _) = try await route(bed, record: bed.harness.root + "/recordings")
            let changes = EventLog<AVSystemRouteChange>()
            let app = try #require(bed.appControllers.first)
            let watcher = Task { for await change in app.routeChanges() { changes.append(change) } }
            defer { watcher.cancel() }
            var ringMemory: FileIdentity?
            do {
                let stream = try await route.startAudioStream()
                ringMemory = FileIdentity(descriptor: stream.ring.memoryFD)
                #expect(ringMemory?.descriptorCount == 1)
                let chunk = [Float](repeating: 0.1, count: 960 * 2)
                #expect(try chunk.withUnsafeBufferPointer { try stream.write($0) })
                let driver = try #require(await bed.supervisor.driverStatuses().first?.pid)
                kill(driver, SIGKILL)
                try await bed.harness.waitUntil("the app's stream ended") { stream.endReason != nil }
                #expect(stream.endReason?.message.contains("killed by signal 9") == true, "\(stream.endReason?.message ?? "")")
                #expect(throws: AVSystemRoutingError.self) { _ = try chunk.withUnsafeBufferPointer { try stream.write($0) } }
                try await bed.harness.waitUntil("route change") { changes.all.contains { $0.reason == .oldDeviceUnavailable } }
            }
            // The stream object is gone: no descriptor of its ring is left in this process.
            try await bed.harness.waitUntil("ring descriptors closed") { ringMemory?.descriptorCount == 0 }
        }
    }

    @Test func theOperatorStreamsAFileAndATestPatternFromTheCLI() async throws {
        try await ReferenceTestBed.run { bed in
            let record = bed.harness.root + "/recordings"
            let receiver = try await bed.listedReceiver(arguments: ["--auth", "none", "--record", record])
            // The CLI activates the device itself, streams two seconds of the tone file and of the test pattern.
            let cli = try await ChildOutput.run(DaemonHarness.binary("mediaroute"), ["--socket", bed.socket, "stream", bed.harness.root + "/media/tone.wav",
                                                                                     "--to", "Den TV", "--test-pattern", "--size", "320x240", "--fps", "25", "--duration", "2"])
            #expect(cli.termination == .exited(0), "\(cli.standardError)")
            #expect(cli.standardOutput.hasPrefix("streamed 2."), "\(cli.standardOutput)")
            #expect(cli.standardOutput.contains("0 overruns"), "\(cli.standardOutput)")
            #expect(cli.standardError.contains("kbit/s  ring"), "the progress line: \(cli.standardError)")
            try await receiver.waitFor("stream r2 ended: ")
            let audio = try WAVReader(path: record + "/r1.wav")
            #expect(abs(Double(audio.frames) / 48_000 - 2) < 0.15, "\(audio.frames) frames")
            let frames = try await ChildOutput.run("/usr/bin/ffprobe", ["-v", "error", "-count_frames", "-select_streams", "v:0",
                                                                         "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", record + "/r2.h264"])
            #expect(Int(frames.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)) == 50, "\(frames.standardOutput)")
            // Nothing to stream, or a device that is not there: said plainly.
            let nothing = try await ChildOutput.run(DaemonHarness.binary("mediaroute"), ["--socket", bed.socket, "stream", "--to", "Den TV"])
            #expect(nothing.termination == .exited(64) && nothing.standardError.contains("give an audio file, --test-pattern, or both"))
            let missing = try await ChildOutput.run(DaemonHarness.binary("mediaroute"), ["--socket", bed.socket, "stream", "/nonexistent.wav", "--to", "Den TV"])
            #expect(missing.termination == .exited(1) && missing.standardError.contains("cannot read /nonexistent.wav"), "\(missing.standardError)")
        }
    }

    /// The peak signal-to-noise ratio of 8-bit `a` against `b`, over all their bytes.
    static func psnr(_ a: Data, _ b: Data) -> Double {
        var squared = 0.0
        let count = min(a.count, b.count)
        a.withUnsafeBytes { x in b.withUnsafeBytes { y in
            for i in 0..<count { let d = Double(x[i]) - Double(y[i]); squared += d * d }
        } }
        return 10 * log10(255 * 255 / max(squared / Double(max(count, 1)), 1e-9))
    }

    /// Finds the lag of `output` against `input` (onset, then a fine search) and the SNR there.
    static func align(_ input: [Float], _ output: [Float]) -> (lag: Int, snr: Double) {
        let onset = output.firstIndex { abs($0) > 0.05 } ?? 0
        var best = (lag: 0, snr: -Double.infinity)
        for lag in max(0, onset - 960)...(onset + 960) {
            var signal = 0.0, noise = 0.0
            for i in stride(from: 4800, to: min(input.count, output.count - lag) - 4800, by: 2) {
                let x = Double(input[i]), y = Double(output[i + lag])
                signal += x * x
                noise += (x - y) * (x - y)
            }
            let snr = 10 * log10(signal / max(noise, 1e-12))
            if snr > best.snr { best = (lag, snr) }
        }
        return best
    }
}

