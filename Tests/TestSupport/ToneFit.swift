import Foundation

/// How cleanly a recording carries a sine of a known frequency: the sine of best fit (least
/// squares on sin and cos, which aligns phase by itself) against what is left over.
public enum ToneFit {
    /// Signal-to-noise ratio in dB of the first channel, after `skipSeconds` of start-up.
    public static func snr(_ interleaved: [Int16], channels: Int, sampleRate: Int, frequency: Double, skipSeconds: Double) -> Double {
        let frames = interleaved.count / max(channels, 1)
        let first = min(frames, Int(skipSeconds * Double(sampleRate)))
        guard frames - first > sampleRate / 10 else { return -.infinity }
        var (ss, cc, sc, xs, xc) = (0.0, 0.0, 0.0, 0.0, 0.0)
        let omega = 2 * Double.pi * frequency / Double(sampleRate)
        for n in first..<frames {
            let x = Double(interleaved[n * channels]), s = sin(omega * Double(n)), c = cos(omega * Double(n))
            ss += s * s; cc += c * c; sc += s * c; xs += x * s; xc += x * c
        }
        let determinant = ss * cc - sc * sc
        let a = (xs * cc - xc * sc) / determinant, b = (xc * ss - xs * sc) / determinant
        var (signal, noise) = (0.0, 0.0)
        for n in first..<frames {
            let fit = a * sin(omega * Double(n)) + b * cos(omega * Double(n))
            let x = Double(interleaved[n * channels])
            signal += fit * fit
            noise += (x - fit) * (x - fit)
        }
        return 10 * log10(signal / max(noise, 1e-9))
    }
}
