import Foundation
import MediaCodecs
import MediaRouteIPC
import TestSupport

/// What an app does with a sample ring, for the tests: a tone written in 10 ms records.
enum AppRing {
    /// A ring of `format` holding `seconds` of a 1 kHz tone (amplitude 0.5, every channel alike),
    /// closed by the producer when `close`. Returns the ring and the tone as written.
    static func tone(_ format: SampleFormat, seconds: Double, close: Bool) throws -> (ring: SampleRing, tone: [Double]) {
        guard case .audio(let rate, let channels, let type) = format else { throw SampleRingError("not audio") }
        let tone = ToneAnalysis.sine(frequency: 1000, sampleRate: rate, count: Int(Double(rate) * seconds))
        let ring = try SampleRing.create(format: format, capacity: tone.count * format.frameBytes + (1 << 16))
        let record = rate / 100
        for start in stride(from: 0, to: tone.count, by: record) {
            let piece = tone[start..<min(start + record, tone.count)]
            let result: SampleRing.WriteResult
            switch type {
            case .float32:
                let samples = piece.flatMap { value in [Float](repeating: Float(value), count: channels) }
                result = try samples.withUnsafeBytes { try ring.write($0, timestamp: SampleRing.monotonicNow()) }
            case .int16:
                let samples = piece.flatMap { value in [Int16](repeating: Int16(value * 32767), count: channels) }
                result = try samples.withUnsafeBytes { try ring.write($0, timestamp: SampleRing.monotonicNow()) }
            }
            guard result == .written else { throw SampleRingError("the test's ring refused a record: \(result)") }
        }
        if close { ring.closeProducer() }
        return (ring, tone)
    }
}
