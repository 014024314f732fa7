import MediaCodecs
import MediaRouteIPC
import PCMPlayback
import Testing
import TestSupport

/// An app's sample ring read as the device's PCM: converted, resampled, ended, starved.
@Suite("PCMPlayback: RingPCMSource", .timeLimit(.minutes(1)))
struct RingPCMSourceTests {
    /// Reads until `.ended`, in blocks of `frames`; fails the test on a starved read.
    static func readAll(_ source: RingPCMSource, frames: Int = 1000) -> [Int16] {
        var all: [Int16] = []
        var block = [Int16](repeating: 0, count: frames * source.format.channels)
        while true {
            switch block.withUnsafeMutableBufferPointer({ source.read(into: $0, waitingUpTo: .seconds(1)) }) {
            case .frames(let count): all += block[0..<(count * source.format.channels)]
            case .ended: return all
            case .starved:
                Issue.record("a ring holding everything starved")
                return all
            }
        }
    }

    @Test func float32At48kMonoBecomesInt16At44k1Stereo() throws {
        let (ring, _) = try AppRing.tone(.audio(sampleRate: 48_000, channels: 1, sampleType: .float32), seconds: 1, close: true)
        let source = try RingPCMSource(ring: ring, format: PCMFormat(sampleRate: 44_100, channels: 2))
        let pcm = Self.readAll(source, frames: 777)
        #expect(abs(pcm.count / 2 - 44_100) <= 64)
        let left = ToneAnalysis.channel(0, of: pcm, channels: 2), right = ToneAnalysis.channel(1, of: pcm, channels: 2)
        #expect(left.elementsEqual(right), "a mono app's channels differ after conversion")
        let frequency = ToneAnalysis.frequency(of: left, sampleRate: 44_100)
        #expect(abs(frequency - 1000) < 2, "measured \(frequency) Hz")
        let reference = ToneAnalysis.sine(frequency: 1000, sampleRate: 44_100, count: 44_100)
        let (snr, lag) = ToneAnalysis.alignedSNR(reference: reference, decoded: left, maximumLag: 200, margin: 1000)
        #expect(snr >= 25, "SNR \(snr) dB at lag \(lag)")
        // Ended stays ended.
        var block = [Int16](repeating: 0, count: 64)
        #expect(block.withUnsafeMutableBufferPointer { source.read(into: $0, waitingUpTo: .milliseconds(10)) } == .ended)
    }

    @Test func int16AtTheDeviceRateIsCopiedExactlyEvenAcrossOddRecords() throws {
        let ring = try SampleRing.create(format: .audio(sampleRate: 48_000, channels: 2, sampleType: .int16), capacity: 1 << 16)
        let samples = (0..<2000).map { Int16(truncatingIfNeeded: $0 * 7) }
        try samples.withUnsafeBytes { bytes in
            var offset = 0
            for size in [3, 1, 5, 997, 2, 4, 1000, 1] + [Int](repeating: 100, count: 19) + [87] {  // records that split frames and samples
                _ = try ring.write(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + size)]), timestamp: 0)
                offset += size
            }
            #expect(offset == bytes.count)
        }
        ring.closeProducer()
        let source = try RingPCMSource(ring: ring, format: PCMFormat(sampleRate: 48_000, channels: 2))
        #expect(Self.readAll(source, frames: 333) == samples)
    }

    @Test func anEmptyRingStarvesAndCountsUnderrunsOnlyOnceStarted() throws {
        let ring = try SampleRing.create(format: .audio(sampleRate: 48_000, channels: 2, sampleType: .float32), capacity: 1 << 16)
        let source = try RingPCMSource(ring: ring, format: PCMFormat(sampleRate: 48_000, channels: 2))
        var block = [Int16](repeating: 0, count: 960)
        func read() -> PCMRead { block.withUnsafeMutableBufferPointer { source.read(into: $0, waitingUpTo: .milliseconds(20)) } }
        #expect(read() == .starved)
        #expect(ring.statistics.underruns == 0)  // the app has not started: no gap yet
        let record = [Float](repeating: 0.25, count: 200)
        _ = try record.withUnsafeBytes { try ring.write($0, timestamp: 0) }
        #expect(read() == .frames(100))
        #expect(block[0] == 8192 && block[199] == 8192)
        #expect(read() == .starved)
        #expect(ring.statistics.underruns == 1)
        ring.closeProducer()
        #expect(read() == .ended)
        #expect(ring.statistics.underruns == 1)
    }

    @Test func aClosedStreamEndsEvenWithRecordsLeft() throws {
        let (ring, _) = try AppRing.tone(.audio(sampleRate: 48_000, channels: 2, sampleType: .float32), seconds: 0.1, close: false)
        let source = try RingPCMSource(ring: ring, format: PCMFormat(sampleRate: 48_000, channels: 2), isOpen: { false })
        var block = [Int16](repeating: 0, count: 20000)
        #expect(block.withUnsafeMutableBufferPointer { source.read(into: $0, waitingUpTo: .milliseconds(10)) } == .frames(4800))
        #expect(block.withUnsafeMutableBufferPointer { source.read(into: $0, waitingUpTo: .milliseconds(10)) } == .ended)
    }

    @Test func videoRingsAndImpossibleFormatsAreRefused() throws {
        let video = try SampleRing.create(format: .video(width: 64, height: 64, frameRate: 30), capacity: 1 << 16)
        #expect { try RingPCMSource(ring: video, format: PCMFormat(sampleRate: 48_000, channels: 2)) } throws: { "\($0)".contains("carries no audio") }
        let audio = try SampleRing.create(format: .defaultAudio, capacity: 1 << 16)
        #expect { try RingPCMSource(ring: audio, format: PCMFormat(sampleRate: 48_000, channels: 6)) } throws: { "\($0)".contains("1 or 2 channels") }
    }
}
