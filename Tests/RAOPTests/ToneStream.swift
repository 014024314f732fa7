import PrivateDaemons
import RAOP
import TestSupport

/// What the receiver tests send and measure: a 441 Hz tone (a whole number of samples per period)
/// from the first sample (the sender leads each stream with silence itself), followed by silence
/// long enough that all of the tone is played before TEARDOWN (it never plays the last 2–3 s
/// before it), and the tone found again in the receiver's output.
struct ToneStream {
    static let frequency = 441.0
    static let sampleRate = 44100
    let toneSeconds: Double
    let silenceSeconds: Double
    let amplitude: Double

    init(toneSeconds: Double = 4, silenceSeconds: Double = 3, amplitude: Double = 0.5) {
        self.toneSeconds = toneSeconds
        self.silenceSeconds = silenceSeconds
        self.amplitude = amplitude
    }

    var tone: [Double] {
        ToneAnalysis.sine(frequency: Self.frequency, sampleRate: Self.sampleRate, count: Int(toneSeconds * Double(Self.sampleRate)), amplitude: amplitude)
    }

    /// The tone then silence, as interleaved stereo (the same on both channels).
    var interleaved: [Int16] {
        let silence = [Double](repeating: 0, count: Int(silenceSeconds * Double(Self.sampleRate)))
        return (tone + silence).flatMap { sample in
            let value = Int16((sample * 32767).rounded())
            return [value, value]
        }
    }

    /// Streams it in 100 ms pieces (as an app's ring would hand them over), then finishes;
    /// `at` is called with the seconds of content sent before each piece (to change things mid-stream).
    func send(with sender: RAOPSender, at: (Double) async throws -> Void = { _ in }) async throws {
        let samples = interleaved
        let piece = Self.sampleRate / 10 * 2
        for start in stride(from: 0, to: samples.count, by: piece) {
            try await at(Double(start / 2) / Double(Self.sampleRate))
            try await sender.send(pcm: Array(samples[start..<min(samples.count, start + piece)]))
        }
        try await sender.finish()
    }

    /// Where the tone starts in `output`'s left channel: the first sample above a tenth of its amplitude.
    func onset(in output: [Double]) -> Int? {
        output.firstIndex { abs($0) > amplitude / 10 }
    }

    /// The runs of tone in `output`'s left channel (start and length in frames): samples above a
    /// tenth of its amplitude, runs split where none is for more than 2 periods.
    func segments(in output: [Int16]) -> [(start: Int, length: Int)] {
        let left = ToneAnalysis.channel(0, of: output, channels: 2)
        let gap = 2 * Int(Double(Self.sampleRate) / Self.frequency)
        var runs: [(start: Int, length: Int)] = []
        for (index, sample) in left.enumerated() where abs(sample) > amplitude / 10 {
            if let last = runs.last, index - (last.start + last.length) <= gap {
                runs[runs.count - 1].length = index - last.start + 1
            } else {
                runs.append((index, 1))
            }
        }
        return runs
    }

    /// The SNR of `output`'s left channel from frame `start` against the tone from its frame
    /// `toneFrame` on, aligned within ±200 frames; 1,000 frames at each end left out.
    func snr(_ output: [Int16], from start: Int, toneFrame: Int) -> Double {
        let left = ToneAnalysis.channel(0, of: output, channels: 2)
        guard start > 200, start < left.count, toneFrame < tone.count else { return -.infinity }
        let reference = [Double](repeating: 0, count: 200) + tone[toneFrame...]
        return ToneAnalysis.alignedSNR(reference: reference, decoded: Array(left[(start - 200)...]), maximumLag: 200, margin: 1000).snr
    }

    /// The SNR of the left channel of `output` against the tone, aligned: the onset found, then the
    /// best lag within ±200 samples of it; 1,000 samples at each end left out.
    func measure(_ output: [Int16]) -> (snr: Double, onsetFrame: Int?, playedFrames: Int) {
        let left = ToneAnalysis.channel(0, of: output, channels: 2)
        guard let onset = onset(in: left), onset > 200 else {
            return (-.infinity, onset(in: left), left.count)
        }
        let decoded = Array(left[(onset - 200)...])
        let (snr, _) = ToneAnalysis.alignedSNR(reference: [Double](repeating: 0, count: 200) + tone, decoded: decoded, maximumLag: 200, margin: 1000)
        return (snr, onset, left.count)
    }

    /// The RMS of the left channel over `seconds` of the tone from `from` seconds after its onset.
    func level(_ output: [Int16], from: Double, seconds: Double) -> Double {
        let left = ToneAnalysis.channel(0, of: output, channels: 2)
        guard let onset = onset(in: left) else { return 0 }
        let start = onset + Int(from * Double(Self.sampleRate)), end = min(left.count, start + Int(seconds * Double(Self.sampleRate)))
        guard end > start else { return 0 }
        return (left[start..<end].reduce(0) { $0 + $1 * $1 } / Double(end - start)).squareRoot()
    }
}
