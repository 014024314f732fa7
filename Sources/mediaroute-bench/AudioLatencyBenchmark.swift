import AVSystemRouting
import CBenchBaseline
import Foundation
import MediaRouteIPC
import MediaRouteSupervisor
import ReferenceProtocol

/// `audio-latency`: end to end on loopback, from an app writing samples into its stream to the
/// receiver having decoded them: the app writes silence at real-time pace with a loud 20 ms burst
/// twice a second, and the receiver reports when decoded sound starts (its onsets). Against libopus
/// and a UDP loopback socket used directly (encode, send, receive, decode) in the same run. It also
/// reports the same bursts leaving the receiver's playout buffer for its sound output (the null
/// output, paced like a card): what the buffer adds (`audio-output-latency` measures it under jitter).
struct AudioLatencyBenchmark {
    let bursts: Int
    static let aim: Duration = .milliseconds(40)

    func run() async throws {
        print("audio-latency: \(bursts) bursts through app, ring, driver, Opus/RTP, receiver, decoder (48 kHz stereo, 20 ms frames)")
        var base = [UInt64](repeating: 0, count: 50)
        guard cbb_opus_udp_latency(50, &base) == 0 else { throw BenchmarkError("the C libopus/UDP baseline failed") }
        let baseline = LatencySamples(base)
        print(baseline.millisecondsLine("  raw libopus over UDP loopback, handover to decoded"))

        let (samples, played) = try await ReferenceStage.run(receiverArguments: ["--report-onsets", "--audio-output", "null"]) { stage in try await measure(stage) }
        let ours = LatencySamples(samples)
        print(ours.millisecondsLine("  app write to receiver decoded"))
        print(LatencySamples(played).millisecondsLine("  app write to leaving the receiver's playout buffer"))
        print("  median under \(Self.aim.milliseconds) ms: \(ours.median < Double(Self.aim.milliseconds) * 1e6 ? "yes" : "no")")
        printResult("audio-latency", ratio: ours.median / baseline.median, target: Double(Self.aim.milliseconds) * 1e6 / baseline.median)
    }

    /// Latencies to decoded, and to leaving the playout buffer.
    private func measure(_ stage: ReferenceStage) async throws -> ([UInt64], [UInt64]) {
        let supervisor = try await stage.supervisor(state: "state")
        var burstTimes: [UInt64] = []
        let mark = stage.receiver.mark
        try await stage.whileRunning(supervisor) { try await stream(supervisor, stage, burstTimes: &burstTimes) }

        // The first onset the receiver reported after each burst was written is that burst's.
        let lines = stage.receiver.output(after: mark).split(separator: "\n")
        func latencies(_ prefix: String) throws -> [UInt64] {
            // "… at TIME" or "… at TIME, device delay …"
            let onsets = lines.filter { $0.hasPrefix(prefix) }.compactMap { line in
                line.split(separator: " at ").last?.split(separator: ",").first.flatMap { UInt64($0) }
            }
            var latencies: [UInt64] = []
            for (index, burst) in burstTimes.enumerated() {
                let next = index + 1 < burstTimes.count ? burstTimes[index + 1] : .max
                if let onset = onsets.first(where: { $0 >= burst && $0 < next }) { latencies.append(onset - burst) }
            }
            guard latencies.count == burstTimes.count else {
                throw BenchmarkError("the receiver heard \(latencies.count) of \(burstTimes.count) bursts (\(onsets.count) \(prefix)): \(stage.receiver.output.suffix(500))")
            }
            return latencies
        }
        return (try latencies("decoded onset in stream "), try latencies("played onset in stream "))
    }

    /// The app's side: a route, a stream, silence with a burst every half second.
    private func stream(_ supervisor: Supervisor, _ stage: ReferenceStage, burstTimes: inout [UInt64]) async throws {
        try await stage.withAppRoute(supervisor) { route in
            let stream = try await route.startAudioStream()

            // Real-time pace: one 20 ms record every 20 ms; every 25th a burst, its write time noted.
            let silence = [Float](repeating: 0, count: 960 * 2)
            let burst = (0..<(960 * 2)).map { Float(0.5 * sin(2 * Double.pi * 1000 * Double($0 / 2) / 48_000)) }
            let start = ContinuousClock.now
            for record in 0..<(bursts * 25 + 25) {
                let loud = record % 25 == 12
                let time = SampleRing.monotonicNow()
                _ = try (loud ? burst : silence).withUnsafeBufferPointer { try stream.write($0, timestamp: time) }
                if loud { burstTimes.append(time) }
                try await Task.sleep(until: start + .milliseconds(20 * (record + 1)))
            }
            try await Task.sleep(for: .milliseconds(200))
            try await stream.stop()
        }
    }
}

/// An observer that only keeps the controller connected (the benchmark reads `activeRoutes`).
@MainActor
final class RouteWaiter: AVSystemRouteControllerObserver {
    nonisolated static let shared = RouteWaiter()
    nonisolated init() {}
    func systemRouteController(_ controller: AVSystemRouteController, handle event: AVSystemRouteEvent) async -> Bool { true }
}
