import COpus
import Foundation
import MediaRouteIPC
import Testing

@Suite("libopus")
struct LibOpusTests {
    /// A 440 Hz stereo sine through encoder and decoder at 128 kbps comes back recognisably.
    @Test func sineSurvivesEncodeDecode() async throws {
        let rate: Int32 = 48_000, channels: Int32 = 2, frame = 960  // 20 ms
        var error: Int32 = 0
        let encoder = try #require(opus_encoder_create(rate, channels, OPUS_APPLICATION_AUDIO, &error))
        defer { opus_encoder_destroy(encoder) }
        #expect(error == OPUS_OK)
        #expect(copus_set_bitrate(encoder, 128_000) == OPUS_OK)
        #expect(copus_set_complexity(encoder, 10) == OPUS_OK)
        let decoder = try #require(opus_decoder_create(rate, channels, &error))
        defer { opus_decoder_destroy(decoder) }

        let frames = 50  // one second
        var input = [Float](repeating: 0, count: frames * frame * 2)
        for i in 0..<(frames * frame) {
            let s = Float(0.5 * sin(2 * Double.pi * 440 * Double(i) / Double(rate)))
            input[2 * i] = s
            input[2 * i + 1] = s
        }
        var output = [Float](repeating: 0, count: input.count)
        var packet = [UInt8](repeating: 0, count: 4000)
        var totalBytes = 0
        for f in 0..<frames {
            let n = input.withUnsafeBufferPointer { opus_encode_float(encoder, $0.baseAddress! + f * frame * 2, Int32(frame), &packet, 4000) }
            #expect(n > 0)
            totalBytes += Int(n)
            let decoded = output.withUnsafeMutableBufferPointer { opus_decode_float(decoder, packet, n, $0.baseAddress! + f * frame * 2, Int32(frame), 0) }
            #expect(decoded == Int32(frame))
        }
        // The bitrate is roughly what was asked for.
        #expect((100_000...160_000).contains(totalBytes * 8))

        // Align on the codec's delay, then compare the left channel: seconds of arithmetic in a debug
        // build, so on a thread of its own, keeping the cooperative pool's two threads for other tests.
        let (sent, received, count) = (input, output, frames * frame)
        let best = try await onThreadOfItsOwn {
            var best = (lag: 0, snr: -Double.infinity)
            for lag in 0..<1000 {
                var signal = 0.0, noise = 0.0
                for i in stride(from: 4800, to: count - 1000, by: 1) {
                    let x = Double(sent[2 * i]), y = Double(received[2 * (i + lag)])
                    signal += x * x
                    noise += (x - y) * (x - y)
                }
                let snr = 10 * log10(signal / max(noise, 1e-12))
                if snr > best.snr { best = (lag, snr) }
            }
            return best
        }
        #expect(best.snr >= 20, "SNR \(best.snr) dB at lag \(best.lag)")
    }

    @Test func rejectsUnsupportedSampleRate() {
        var error: Int32 = 0
        let encoder = opus_encoder_create(44_100, 2, OPUS_APPLICATION_AUDIO, &error)
        #expect(encoder == nil)
        #expect(error == OPUS_BAD_ARG)
        #expect(String(cString: opus_strerror(error)) == "invalid argument")
    }
}
