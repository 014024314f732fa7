import Glibc

/// Measures decoded audio against what went in: the signal-to-noise ratio after lining the two
/// up, and a tone's frequency. How tests and benchmarks judge a lossy path end to end.
public enum ToneAnalysis {
    /// A sine of `frequency` Hz at `amplitude` (of full scale 1.0), `count` samples long.
    public static func sine(frequency: Double, sampleRate: Int, count: Int, amplitude: Double = 0.5) -> [Double] {
        (0..<count).map { amplitude * sin(2 * Double.pi * frequency * Double($0) / Double(sampleRate)) }
    }

    /// The SNR in dB of `decoded` against `reference`, at the shift of `decoded` (within
    /// ±`maximumLag` samples) that matches best; `margin` samples at each end are left out
    /// (codec start-up and the padded tail).
    public static func alignedSNR(reference: [Double], decoded: [Double], maximumLag: Int, margin: Int) -> (snr: Double, lag: Int) {
        func range(_ lag: Int, window: Int) -> Range<Int> {
            let start = max(margin, -lag + margin)
            let end = min(reference.count - margin, decoded.count - lag - margin, window > reference.count ? Int.max : start + window)
            return start..<max(start, end)
        }
        var best = (correlation: -Double.infinity, lag: 0)
        for lag in -maximumLag...maximumLag {
            var sum = 0.0
            for i in range(lag, window: 4096) { sum += reference[i] * decoded[i + lag] }
            if sum > best.correlation { best = (sum, lag) }
        }
        var signal = 0.0, noise = 0.0
        for i in range(best.lag, window: .max) {
            let error = reference[i] - decoded[i + best.lag]
            signal += reference[i] * reference[i]
            noise += error * error
        }
        guard signal > 0 else { return (-.infinity, best.lag) }
        return (noise == 0 ? .infinity : 10 * log10(signal / noise), best.lag)
    }

    /// The frequency of the tone in `samples`, from its rising zero crossings (interpolated);
    /// a crossing counts only after the signal went below a tenth of its peak, so that noise
    /// around zero (a codec's start, silence) adds none.
    public static func frequency(of samples: [Double], sampleRate: Int) -> Double {
        let threshold = 0.1 * (samples.map(abs).max() ?? 0)
        var first: Double?, last = 0.0, crossings = 0, armed = false
        for i in 1..<max(samples.count, 1) {
            if samples[i - 1] < -threshold { armed = true }
            guard armed, samples[i - 1] < 0, samples[i] >= 0 else { continue }
            armed = false
            let at = Double(i - 1) + samples[i - 1] / (samples[i - 1] - samples[i])
            if first == nil { first = at } else { crossings += 1 }
            last = at
        }
        guard let first, crossings > 0 else { return 0 }
        return Double(crossings) * Double(sampleRate) / (last - first)
    }

    /// One channel of interleaved Int16 as ±1.0 samples.
    public static func channel(_ channel: Int, of interleaved: [Int16], channels: Int) -> [Double] {
        stride(from: channel, to: interleaved.count, by: channels).map { Double(interleaved[$0]) / 32768 }
    }
}

