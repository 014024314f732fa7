import Foundation
import MediaCodecs
import RTP
import Testing
import TestSupport

/// The playout buffer on simulated time: a real libopus encoder sends a 440 Hz tone in 20 ms
/// packets, a simulated network delays (uniformly up to a bound, which reorders), drops and
/// stretches them (a sender whose clock runs fast or slow), and a simulated sound card reads
/// 10 ms every 10 ms. Seconds of stream take milliseconds of test.
@Suite("Audio playout buffer", .onAThreadOfItsOwn)
struct AudioPlayoutBufferTests {
    struct Network {
        var maximumDelay = 0.0
        var dropEvery = 0
        /// The sender's clock against the card's: 1.003 sends 0.3 % fast.
        var senderClockRate = 1.0
        /// The card stops reading for a while (a sound server that stalled) and goes on at its pace.
        var cardStall: (at: Double, seconds: Double)?
    }

    struct Run {
        var output: [Float] = []
        var firstAudio: Int?
        var statistics: AudioPlayoutBuffer.Statistics?
        /// The longest run of silence (below −40 dBFS, 5 ms blocks) after the first audio, in ms.
        var longestSilence: Double
        var frequency: Double
        var peak: Float
    }

    /// Streams `seconds` of tone through `network` into a buffer read like a card.
    func run(seconds: Double, _ network: Network) throws -> Run {
        let buffer = try AudioPlayoutBuffer()
        var settings = OpusEncoder.Settings()
        settings.complexity = 3  // the buffer is under test, not the encoder: less CPU for the suite around it
        let encoder = try OpusRTPEncoder(settings, sampleType: .float32, payloadType: 96)
        let base = ContinuousClock.now
        var random = SeededRandom(seed: 20)
        // Every packet with its arrival time (seconds from the start).
        var arrivals: [(time: Double, packet: RTPPacket)] = []
        let packetCount = Int(seconds / 0.02)
        for index in 0..<packetCount {
            let tone = (0..<960).flatMap { frame -> [Float] in
                let value = Float(0.5 * sin(2 * Double.pi * 440 * Double(index * 960 + frame) / 48_000))
                return [value, value]
            }
            let sent = Double(index) * 0.02 / network.senderClockRate
            _ = try tone.withUnsafeBytes { samples in
                try encoder.add(samples) { datagram in
                    let packet = try! RTPPacket(datagram: datagram)
                    if network.dropEvery > 0, index % network.dropEvery == network.dropEvery - 1 { return }
                    arrivals.append((sent + Double.random(in: 0...network.maximumDelay, using: &random), packet))
                }
            }
        }
        arrivals.sort { $0.time < $1.time }
        var next = 0
        var result = Run(statistics: nil, longestSilence: 0, frequency: 0, peak: 0)
        var period = [Float](repeating: 0, count: 480 * 2)
        // The card stops reading before the stream's end: running dry there is no underrun.
        for read in 0..<Int((seconds - 0.2) / 0.01) {
            let now = Double(read) * 0.01
            if let stall = network.cardStall, now >= stall.at, now < stall.at + stall.seconds { continue }
            while next < arrivals.count, arrivals[next].time <= now {
                buffer.insert(arrivals[next].packet, arrival: base + .nanoseconds(Int64(arrivals[next].time * 1e9)))
                next += 1
            }
            if period.withUnsafeMutableBufferPointer({ buffer.read(into: $0) }) == .audio, result.firstAudio == nil { result.firstAudio = read }
            result.output += period
        }
        result.statistics = buffer.statistics
        let left = stride(from: 0, to: result.output.count, by: 2).map { Double(result.output[$0]) }
        let start = (result.firstAudio ?? 0) * 480
        var silent = 0, longest = 0
        for block in stride(from: start, to: left.count - 240, by: 240) {
            var energy = 0.0
            for sample in left[block..<(block + 240)] { energy += sample * sample }
            let rms = (energy / 240).squareRoot()
            silent = rms < 0.01 ? silent + 1 : 0
            longest = max(longest, silent)
        }
        result.longestSilence = Double(longest) * 5
        let steady = Array(left[(start + 48_000)...].prefix(48_000))
        result.frequency = ToneAnalysis.frequency(of: steady, sampleRate: 48_000)
        result.peak = Float(steady.map(abs).max() ?? 0)
        return result
    }

    @Test func onLoopbackItHoldsLittleAndNeverRunsDry() throws {
        let run = try run(seconds: 10, Network())
        let statistics = try #require(run.statistics)
        #expect(statistics.underruns == 0 && statistics.concealedFrames == 0 && statistics.lost == 0, "\(statistics)")
        #expect(statistics.targetDelay <= .milliseconds(36), "\(statistics)")
        // It starts as soon as it holds its target: two packets.
        #expect((run.firstAudio ?? 99) <= 4, "first audio at read \(run.firstAudio ?? -1)")
        #expect(run.longestSilence <= 10, "\(run.longestSilence) ms of silence after the start ")
        #expect(abs(run.frequency - 440) < 1, "\(run.frequency) Hz")
        #expect(run.peak > 0.4 && run.peak < 0.6, "peak \(run.peak)")
    }

    @Test func onAJitteryNetworkItGrowsAndConcealsInsteadOfGoingSilent() throws {
        // Up to 60 ms late (packets overtake each other), one in 25 lost.
        let run = try run(seconds: 12, Network(maximumDelay: 0.06, dropEvery: 25))
        let statistics = try #require(run.statistics)
        #expect(statistics.targetDelay >= .milliseconds(60) && statistics.targetDelay <= .milliseconds(110), "\(statistics)")
        #expect(statistics.lost >= 12 * 50 / 25 - 2, "every dropped packet was concealed in its place: \(statistics)")
        // Underruns only while it learns the network (its first packets saw no jitter yet).
        #expect(statistics.underruns <= 5, "\(statistics)")
        #expect(run.longestSilence <= 10, "no gap: \(run.longestSilence) ms of silence")
        #expect(abs(run.frequency - 440) < 3, "\(run.frequency) Hz")
    }

    @Test func aStalledCardsBacklogIsSkippedWithoutAGap() throws {
        let run = try run(seconds: 8, Network(cardStall: (at: 2, seconds: 0.15)))
        let statistics = try #require(run.statistics)
        #expect(statistics.underruns == 0, "\(statistics)")
        #expect(statistics.skipped >= .milliseconds(60), "\(statistics)")
        let off = abs((statistics.bufferedDelay - statistics.targetDelay) / .milliseconds(1))
        #expect(off <= 15, "back near the target: \(statistics)")
        #expect(run.longestSilence <= 10, "\(run.longestSilence) ms of silence")
    }

    @Test(arguments: [1.003, 0.997])
    func clockDriftIsTakenUpWithoutUnderruns(rate: Double) throws {
        let run = try run(seconds: 20, Network(senderClockRate: rate))
        let statistics = try #require(run.statistics)
        #expect(statistics.underruns == 0, "\(statistics)")
        let off = abs((statistics.bufferedDelay - statistics.targetDelay) / .milliseconds(1))
        #expect(off <= 15, "holding \(statistics.bufferedDelay) for a target of \(statistics.targetDelay)")
        // At most ±0.5 % of speed: the tone's pitch stays within 440 ± 2.2 Hz.
        #expect(abs(run.frequency - 440 * rate) < 3, "\(run.frequency) Hz")
    }
}

/// SplitMix64: the same "random" network every run.
struct SeededRandom: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE5_E9B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
