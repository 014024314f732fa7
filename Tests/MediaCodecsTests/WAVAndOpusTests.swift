import Foundation
import MediaCodecs
import Testing

/// Files and packets from outside: a WAV file someone streams, Opus packets off the network.
@Suite("WAV reading and Opus decoding of bad input", .timeLimit(.minutes(1)))
struct WAVAndOpusTests {
    private func wav(format tag: UInt16 = 3, bits: UInt16 = 32, channels: UInt16 = 2, fmtSize: UInt32 = 16, dataSize: UInt32? = nil, data: [UInt8]) throws -> String {
        func le<T: FixedWidthInteger>(_ value: T) -> [UInt8] { withUnsafeBytes(of: value.littleEndian, Array.init) }
        var bytes = Array("RIFF".utf8) + le(UInt32(0)) + Array("WAVE".utf8)
        bytes += Array("fmt ".utf8) + le(fmtSize) + le(tag) + le(channels) + le(UInt32(48_000)) + le(UInt32(48_000) * UInt32(channels) * UInt32(bits / 8))
        bytes += le(channels * bits / 8) + le(bits)
        bytes += [UInt8](repeating: 0, count: Int(min(fmtSize, 64)) - 16)
        bytes += Array("data".utf8) + le(dataSize ?? UInt32(data.count)) + data
        let path = NSTemporaryDirectory() + "wav-\(UUID().uuidString).wav"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func aPartialLastFrameIsDroppedAndAStreamedSizeIsBelievedOnlyAsFarAsTheFile() throws {
        let one: Float = 0.5
        let frame = withUnsafeBytes(of: one) { Array($0) } + withUnsafeBytes(of: -one) { Array($0) }
        let path = try wav(dataSize: 0xFFFF_FFFF, data: frame + frame + [1, 2, 3])  // two frames and 3 stray bytes
        defer { try? FileManager.default.removeItem(atPath: path) }
        let reader = try WAVReader(path: path)
        #expect(reader.frames == 2)
        #expect(reader.read(frames: 10) == [0.5, -0.5, 0.5, -0.5])
        #expect(reader.read(frames: 10).isEmpty)
    }

    @Test func aFormatChunkClaimingGigabytesIsRefusedWithoutReadingThem() throws {
        let path = try wav(fmtSize: 0xFFFF_FFF0, data: [])
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect {
            _ = try WAVReader(path: path)
        } throws: { "\($0)".contains("runs past the end of the file") }
    }

    @Test func anUnknownEncodingIsNamed() throws {
        let path = try wav(format: 2, bits: 4, data: [0, 0])  // Microsoft ADPCM
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect {
            _ = try WAVReader(path: path)
        } throws: { "\($0)".contains("4-bit format tag 0x2 samples; this reads 16-bit integer PCM or 32-bit float") }
    }

    @Test func anEmptyOpusPacketIsAnErrorNotAConcealment() throws {
        let decoder = try OpusDecoder()
        var pcm = [Float](repeating: 0, count: 5760 * 2)
        #expect(throws: CodecError.self) {
            _ = try [UInt8]().withUnsafeBytes { try decoder.decode($0, into: &pcm, frameSize: 5760) }
        }
        // A real loss (nil) still conceals exactly the frame asked for.
        #expect(try decoder.decode(nil, into: &pcm, frameSize: 960) == 960)
    }
}
