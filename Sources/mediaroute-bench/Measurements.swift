import CBenchBaseline

/// Latency samples in nanoseconds, summarised the way every benchmark reports them.
struct LatencySamples {
    private(set) var sorted: [UInt64]

    init(_ samples: [UInt64]) { sorted = samples.sorted() }

    func percentile(_ p: Double) -> Double {
        guard !sorted.isEmpty else { return 0 }
        let index = min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))
        return Double(sorted[index])
    }

    var median: Double { percentile(0.5) }
    var p99: Double { percentile(0.99) }

    func line(_ label: String) -> String {
        "\(label): median \(format(median / 1000)) µs, p99 \(format(p99 / 1000)) µs (\(sorted.count) samples)"
    }

    /// The same in milliseconds, for latencies that long.
    func millisecondsLine(_ label: String) -> String {
        "\(label): median \(format(median / 1e6)) ms, p99 \(format(p99 / 1e6)) ms (\(sorted.count) samples)"
    }
}

func format(_ value: Double, digits: Int = 2) -> String {
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let rounded = (value * scale).rounded() / scale
    return "\(rounded)"
}

func now() -> UInt64 { cbb_now_ns() }

/// The single line scripts read: ratio of ours to the baseline, and the target it must not exceed.
func printResult(_ name: String, ratio: Double, target: Double) {
    print("RESULT \(name) ratio=\(format(ratio)) target=\(format(target))")
}
