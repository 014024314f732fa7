import CBenchBaseline
import Foundation
import PrivateDaemons

/// `audio-output-latency`: sound at the output, from a sender handing 20 ms of PCM to the Opus
/// encoder to that sound leaving the receiver's playout buffer for the sound card (the null output,
/// paced like a card), over UDP on loopback: directly, and through the benchmark's own bad network
/// (`JitterRelay`: delays up to 40 ms, so reordering, and one packet in 50 dropped). Silence with a
/// loud 20 ms burst every half second; the first 10 ms that leaves loud after silence is the burst's.
/// Against libopus and a UDP loopback socket used directly (encode, send, receive, decode, no
/// buffer) in the same run.
struct AudioOutputLatencyBenchmark {
    let bursts: Int
    /// On loopback the buffer holds a packet, a read and 5 ms: app write to output under this.
    static let aim: Duration = .milliseconds(50)
    static let jitteryNetwork = JitterRelay.Network(maximumDelay: .milliseconds(40), dropEvery: 50)

    func run() async throws {
        print("audio-output-latency: \(bursts) bursts, sender to the playout buffer's output (48 kHz stereo, 20 ms Opus frames, 10 ms reads)")
        var base = [UInt64](repeating: 0, count: 50)
        guard cbb_opus_udp_latency(50, &base) == 0 else { throw BenchmarkError("the C libopus/UDP baseline failed") }
        let baseline = LatencySamples(base)
        print(baseline.millisecondsLine("  raw libopus over UDP loopback, handover to decoded (no playout buffer)"))

        let direct = try await measure(network: nil, label: "loopback")
        let network = Self.jitteryNetwork
        _ = try await measure(network: network, label: "relay: 0-\(network.maximumDelay.components.seconds * 1000 + network.maximumDelay.components.attoseconds / 1_000_000_000_000_000) ms delay, 1 in \(network.dropEvery) dropped")
        print("  loopback median under \(Self.aim.components.attoseconds / 1_000_000_000_000_000) ms: \(direct.median < Double(Self.aim.components.attoseconds) / 1e9 ? "yes" : "no")")
        printResult("audio-output-latency", ratio: direct.median / baseline.median, target: (Double(Self.aim.components.attoseconds) / 1e9) / baseline.median)
    }

    private func measure(network: JitterRelay.Network?, label: String) async throws -> LatencySamples {
        let frames = bursts * 25 + 25
        let burst = (0..<960).flatMap { frame -> [Float] in
            let value = Float(0.5 * sin(2 * Double.pi * 1000 * Double(frame) / 48_000))
            return [value, value]
        }
        let silence = [Float](repeating: 0, count: 960 * 2)
        let result = try await PlayoutLink(network: network).run(frames: frames) { $0 % 25 == 12 ? burst : silence }

        // Onsets: a loud 10 ms after at least 100 ms of silence, at the time it left the buffer.
        var onsets: [UInt64] = []
        var silent = 0
        for (index, time) in result.periodTimes.enumerated() {
            var energy: Float = 0
            for sample in result.output[(index * 960)..<((index + 1) * 960)] { energy += sample * sample }
            let rms = (energy / 960).squareRoot()
            if rms < 0.01 { silent += 1 } else if rms > 0.05 && silent >= 10 { silent = 0; onsets.append(time) }
        }
        let written = stride(from: 12, to: frames, by: 25).map { result.writeTimes[$0] }
        var latencies: [UInt64] = []
        for (index, time) in written.enumerated() {
            let next = index + 1 < written.count ? written[index + 1] : .max
            if let onset = onsets.first(where: { $0 >= time && $0 < next }) { latencies.append(onset - time) }
        }
        let samples = LatencySamples(latencies)
        let statistics = result.statistics
        func ms(_ duration: Duration) -> String { format(duration / .milliseconds(1), digits: 1) }
        print(samples.millisecondsLine("  \(label): app write to leaving the playout buffer") + ", \(written.count - latencies.count) bursts not heard")
        print("    buffer: target \(ms(statistics.targetDelay)) ms (jitter \(ms(statistics.jitter)) ms), \(statistics.underruns) underruns, "
              + "\(statistics.concealedFrames) frames concealed (\(statistics.lost) lost, \(statistics.late) late)"
              + (result.relay.map { "; relay: \($0.relayed) passed, \($0.dropped) dropped, \($0.reordered) reordered" } ?? ""))
        return samples
    }
}
