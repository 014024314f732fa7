import AVSystemRouting
import Foundation

/// What an app plays in the audio tests: a sine at half scale, 48 kHz stereo Float32, written in
/// 20 ms records at real-time pace, as an app's audio callback would.
public enum AppTone {
    /// Writes `seconds` of `frequency` into `stream`; returns whether every record was taken.
    public static func write(_ stream: AVSystemRouteSampleStream, seconds: Double, frequency: Double) async throws -> Bool {
        let rate = 48_000, frame = 960
        let start = ContinuousClock.now
        var taken = true
        for chunk in 0..<Int(seconds * 50) {
            var samples = [Float](repeating: 0, count: frame * 2)
            for i in 0..<frame {
                let value = Float(0.5 * sin(2 * Double.pi * frequency * Double(chunk * frame + i) / Double(rate)))
                samples[2 * i] = value
                samples[2 * i + 1] = value
            }
            taken = try samples.withUnsafeBufferPointer { try stream.write($0) } && taken
            try await Task.sleep(until: start + .milliseconds(20 * (chunk + 1)))
        }
        return taken
    }
}
