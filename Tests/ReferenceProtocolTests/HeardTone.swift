import Foundation
import MediaCodecs
import TestSupport

/// A tone as recorded: where it is loud (5 ms blocks above −30 dBFS), its frequency, peak and longest gap inside.
struct HeardTone: CustomStringConvertible {
    var seconds = 0.0, frequency = 0.0, peak: Float = 0, longestGap = 0.0
    var description: String { "\(String(format: "%.2f", seconds)) s of \(String(format: "%.1f", frequency)) Hz at peak \(peak), longest gap \(longestGap) ms" }

    init(wav path: String) throws {
        self.init(samples: try Self.samples(wav: path))
    }

    /// A WAV's samples, interleaved.
    static func samples(wav path: String) throws -> [Float] {
        let reader = try WAVReader(path: path)
        return reader.read(frames: reader.frames)
    }

    /// From 48 kHz interleaved stereo.
    init(samples: [Float]) {
        let left = stride(from: 0, to: samples.count, by: 2).map { samples[$0] }
        let blocks = stride(from: 0, to: left.count - 240, by: 240).map { start -> Bool in
            var energy: Float = 0
            for sample in left[start..<(start + 240)] { energy += sample * sample }
            return (energy / 240).squareRoot() > 0.03
        }
        guard let first = blocks.firstIndex(of: true), let last = blocks.lastIndex(of: true) else { return }
        seconds = Double(last + 1 - first) * 0.005
        var gap = 0, longest = 0
        for loud in blocks[first...last] {
            gap = loud ? 0 : gap + 1
            longest = max(longest, gap)
        }
        longestGap = Double(longest) * 5
        let tone = Array(left[(first * 240)..<((last + 1) * 240)])
        peak = tone.map(abs).max() ?? 0
        frequency = ToneAnalysis.frequency(of: tone.map(Double.init), sampleRate: 48_000)
    }
}
