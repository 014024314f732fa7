import CBenchBaseline
import Foundation
import MediaCodecs
import MediaRouteIPC

/// `opus-encode`: the driver's audio path (records out of a sample ring, accumulated into 20 ms
/// frames, encoded, packetized as RTP) against libopus called in a plain C loop, at identical
/// settings: 48 kHz stereo, 128 kbit/s, 20 ms, complexity 10, restricted low delay.
struct OpusEncodeBenchmark {
    let seconds: Int

    func run() async throws {
        let frames = seconds * 50, frameSize = 960
        var pcm = [Float](repeating: 0, count: frames * frameSize * 2)
        for i in 0..<(frames * frameSize) {
            let t = Double(i) / 48_000
            pcm[2 * i] = Float(0.4 * sin(2 * .pi * 440 * t) + 0.1 * sin(2 * .pi * 3_000 * t))
            pcm[2 * i + 1] = Float(0.4 * sin(2 * .pi * 660 * t))
        }
        print("opus-encode: \(seconds) s of 48 kHz stereo, 128 kbit/s, 20 ms frames, complexity 10, best of seven runs each")
        var baseline: [UInt64] = [], ours: [UInt64] = []
        for _ in 0..<7 {
            let start = now()
            guard cbb_opus_encode(pcm, Int32(frames), Int32(frameSize), 2, 128_000, 10) == 0 else { throw BenchmarkError("the C libopus loop failed") }
            baseline.append(now() - start)
            ours.append(try driverPath(pcm))
        }
        let c = Double(baseline.min()!), swift = Double(ours.min()!)
        print("  raw C libopus loop: \(format(c / 1e6)) ms, \(format(Double(seconds) * 1e9 / c, digits: 0))× real time")
        print("  driver path (ring, frames, Opus, RTP): \(format(swift / 1e6)) ms, \(format(Double(seconds) * 1e9 / swift, digits: 0))× real time")
        printResult("opus-encode", ratio: swift / c, target: 1.1)
    }

    /// What `SampleSender` does, minus the UDP send: 10 ms records written into a ring, read out,
    /// and given to the same `OpusRTPEncoder`.
    private func driverPath(_ pcm: [Float]) throws -> UInt64 {
        var settings = OpusEncoder.Settings()
        settings.bitrate = 128_000
        settings.complexity = 10
        let encoder = try OpusRTPEncoder(settings, sampleType: .float32, payloadType: 111)
        let ring = try SampleRing.create(format: .defaultAudio, capacity: 1 << 20)
        let record = 480 * 2
        var sent = 0
        let start = now()
        try pcm.withUnsafeBufferPointer { samples in
            for offset in stride(from: 0, to: samples.count, by: record) {
                _ = try ring.write(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: samples[offset..<(offset + record)])), timestamp: 0)
                var failure: (any Error)?
                _ = try ring.read { payload, _ in
                    do { sent += try encoder.add(payload) { _ in } } catch { failure = error }
                }
                if let failure { throw failure }
            }
        }
        guard sent > 0 else { throw BenchmarkError("the driver path encoded nothing") }
        return now() - start
    }
}

/// `x264-encode`: the driver's video path (x264 through `H264RTPEncoder`, packetized as RTP) against
/// the `x264` command-line encoder on the same frames, at identical settings: 1280×720, 30 fps,
/// veryfast, zerolatency, one thread, a keyframe every 60 frames (and libx264's default of headers before each).
struct X264EncodeBenchmark {
    let frames: Int

    func run() async throws {
        guard let cli = ["/usr/bin/x264", "/usr/local/bin/x264"].first(where: FileManager.default.isExecutableFile(atPath:)) else {
            throw BenchmarkError("the baseline needs the x264 command-line encoder: apt-get install x264")
        }
        let (width, height) = (1280, 720)
        let pattern = TestPattern(width: width, height: height)
        let input = NSTemporaryDirectory() + "mediaroute-bench-\(getpid()).yuv"
        defer { try? FileManager.default.removeItem(atPath: input) }
        var video = Data(capacity: pattern.frameBytes * frames)
        for index in 0..<frames { video.append(contentsOf: pattern.frame(index)) }
        try video.write(to: URL(fileURLWithPath: input))
        print("x264-encode: \(frames) frames of 1280x720 test pattern, veryfast, zerolatency, one thread")

        let arguments = ["--preset", "veryfast", "--tune", "zerolatency", "--threads", "1", "--keyint", "60", "--fps", "30",
                         "--input-res", "\(width)x\(height)", "--input-csp", "i420", "--quiet", "--no-progress", "--muxer", "raw", "-o", "/dev/null", input]
        var baseline: [UInt64] = [], ours: [UInt64] = []
        for _ in 0..<3 {
            let start = now()
            let output = try await ChildOutput.run(cli, arguments)
            guard output.termination == .exited(0) else { throw BenchmarkError("x264 \(output.termination): \(output.standardError)") }
            baseline.append(now() - start)
            ours.append(try driverPath(video, pattern))
        }
        let c = Double(baseline.min()!), swift = Double(ours.min()!)
        print("  x264 CLI: \(format(c / 1e6)) ms, \(format(Double(frames) * 1e9 / c, digits: 1)) frames/s")
        print("  driver path (x264 library, RTP): \(format(swift / 1e6)) ms, \(format(Double(frames) * 1e9 / swift, digits: 1)) frames/s")
        printResult("x264-encode", ratio: swift / c, target: 1.1)
    }

    private func driverPath(_ video: Data, _ pattern: TestPattern) throws -> UInt64 {
        var settings = H264Encoder.Settings(width: pattern.width, height: pattern.height, frameRate: 30)
        settings.keyframeInterval = 60
        let encoder = try H264RTPEncoder(settings, payloadType: 96)
        var sent = 0
        let start = now()
        try video.withUnsafeBytes { bytes in
            for index in 0..<frames {
                let frame = UnsafeRawBufferPointer(rebasing: bytes[(index * pattern.frameBytes)..<((index + 1) * pattern.frameBytes)])
                sent += try encoder.add(frame) { _ in }
            }
        }
        guard sent > 0 else { throw BenchmarkError("the driver path encoded nothing") }
        return now() - start
    }
}
