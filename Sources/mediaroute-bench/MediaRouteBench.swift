import ArgumentParser
import Foundation
import Glibc
import MediaRouteIPC

/// `mediaroute-bench NAME`: runs one benchmark against a baseline measured in the same run and ends
/// with `RESULT NAME ratio=R target=T` (ours divided by the baseline; lower is better).
@main
struct MediaRouteBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mediaroute-bench",
        abstract: "Measure MediaRoute against raw C baselines, in one run.",
        discussion: "Benchmarks: \(Benchmark.all.map(\.name).joined(separator: ", ")). Build with -c release.")

    @Argument(help: "The benchmark to run.")
    var name: String

    @Option(help: .hidden)
    var peer: String?

    @Option(help: "Measured iterations (default: the benchmark's own).")
    var iterations: Int?

    func run() async throws {
        if let peer {
            try await BenchmarkPeer.run(mode: peer, argument: name)
            return
        }
        guard let benchmark = Benchmark.all.first(where: { $0.name == name }) else {
            throw ValidationError("unknown benchmark \"\(name)\"; choose one of: \(Benchmark.all.map(\.name).joined(separator: ", "))")
        }
        // Ctrl-C or a kill ends the benchmark through its own tear-down, so the renderers, daemons
        // and namespaces it started go with it; one that does not end soon is left at 20 s.
        let signals = try SignalPipe([SIGINT, SIGTERM])
        let work = Task { try await benchmark.run(iterations) }
        let interrupt = Task {
            guard let number = await signals.next() else { return }
            FileHandle.standardError.write(Data("mediaroute-bench: signal \(number): stopping what \(name) started\n".utf8))
            work.cancel()
            try? await Task.sleep(for: .seconds(20))
            Glibc.exit(128 + number)
        }
        defer { interrupt.cancel() }
        do { try await work.value } catch is CancellationError { throw ExitCode(130) }
    }
}

struct Benchmark: Sendable {
    let name: String
    let run: @Sendable (_ iterations: Int?) async throws -> Void

    static let all: [Benchmark] = [
        Benchmark(name: "ipc-rtt") { try await IPCRoundTripBenchmark(iterations: $0 ?? 20_000).run() },
        Benchmark(name: "wire-codec") { try await WireCodecBenchmark(iterations: $0 ?? 200_000).run() },
        Benchmark(name: "ipc-notify") { try await IPCNotifyBenchmark(messages: $0 ?? 500_000).run() },
        Benchmark(name: "driver-restart") { try await DriverRestartBenchmark(iterations: $0 ?? 50).run() },
        Benchmark(name: "picker-scale") { try await PickerScaleBenchmark(runs: $0 ?? 10).run() },
        Benchmark(name: "reference-latency") { try await ReferenceLatencyBenchmark(iterations: $0 ?? 10).run() },
        Benchmark(name: "ring-throughput") { try await RingThroughputBenchmark(megabytes: $0 ?? 4096).run() },
        Benchmark(name: "ring-wakeup") { try await RingWakeupBenchmark(count: $0 ?? 1000).run() },
        Benchmark(name: "opus-encode") { try await OpusEncodeBenchmark(seconds: $0 ?? 60).run() },
        Benchmark(name: "sbc-encode") { try await SBCEncodeBenchmark(seconds: $0 ?? 60).run() },
        Benchmark(name: "bluetooth-latency") { try await BluetoothLatencyBenchmark(bursts: $0 ?? 40).run() },
        Benchmark(name: "x264-encode") { try await X264EncodeBenchmark(frames: $0 ?? 300).run() },
        Benchmark(name: "audio-latency") { try await AudioLatencyBenchmark(bursts: $0 ?? 20).run() },
        Benchmark(name: "audio-output-latency") { try await AudioOutputLatencyBenchmark(bursts: $0 ?? 40).run() },
        Benchmark(name: "dlna-latency") { try await DLNALatencyBenchmark(iterations: $0 ?? 10).run() },
        Benchmark(name: "raop-stream") { try await RAOPStreamBenchmark(seconds: $0 ?? 60).run() },
        Benchmark(name: "nowplaying-latency") { try await NowPlayingLatencyBenchmark(iterations: $0 ?? 300).run() },
        Benchmark(name: "mirror-latency") { try await MirrorLatencyBenchmark(changes: $0 ?? 40).run() },
    ]
}
