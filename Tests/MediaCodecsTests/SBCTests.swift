import Foundation
import MediaCodecs
import Testing
import TestSupport

/// SBC through the real libsbc: what our encoder makes decodes (with libsbc and with the
/// independent `sbcdec` of sbc-tools) back to the tone that went in.
@Suite("SBC: encoder and decoder over libsbc", .timeLimit(.minutes(1)))
struct SBCTests {
    /// One second of a 1 kHz tone at 48 kHz: the left channel the tone, the right half as loud.
    static func tone(sampleRate: Int = 48_000, seconds: Double = 1) -> (left: [Double], pcm: [Int16]) {
        let left = ToneAnalysis.sine(frequency: 1000, sampleRate: sampleRate, count: Int(Double(sampleRate) * seconds))
        var pcm = [Int16](repeating: 0, count: left.count * 2)
        for (i, value) in left.enumerated() {
            pcm[2 * i] = Int16(value * 32767)
            pcm[2 * i + 1] = Int16(value * 16383)
        }
        return (left, pcm)
    }

    static func encode(_ pcm: [Int16], _ settings: SBCSettings = SBCSettings()) throws -> [UInt8] {
        let encoder = try SBCEncoder(settings)
        let frames = pcm.count * 2 / encoder.codesize
        var output = [UInt8](repeating: 0, count: frames * encoder.frameBytes)
        let written = try pcm.withUnsafeBytes { input in
            try output.withUnsafeMutableBytes { out in
                try encoder.encode(UnsafeRawBufferPointer(rebasing: input[0..<(frames * encoder.codesize)]), into: out)
            }
        }
        #expect(written == output.count)
        return output
    }

    @Test func theSizesAreTheSpecsAndLibsbcs() throws {
        let encoder = try SBCEncoder(SBCSettings())
        #expect(encoder.frameBytes == 119)  // 48 kHz joint stereo, 16 blocks, 8 subbands, bitpool 53
        #expect(encoder.codesize == 16 * 8 * 2 * 2)
        #expect(SBCSettings().bitrate == 119 * 8 * 48_000 / 128)
        let mono = try SBCEncoder(SBCSettings(sampleRate: 44_100, channelMode: .mono, blocks: 8, subbands: 4, allocation: .snr, bitpool: 20))
        #expect(mono.frameBytes == 4 + 2 + (8 * 20 + 7) / 8)
        #expect(mono.codesize == 8 * 4 * 2)
    }

    @Test func aRoundTripKeepsTheTone() throws {
        let (left, pcm) = Self.tone()
        let sbc = try Self.encode(pcm)
        let decoder = try SBCDecoder()
        let decoded = try sbc.withUnsafeBytes { try decoder.decode($0) }
        #expect(decoder.sampleRate == 48_000 && decoder.channels == 2)
        #expect(decoded.count == pcm.count)
        let (snr, lag) = ToneAnalysis.alignedSNR(reference: left, decoded: ToneAnalysis.channel(0, of: decoded, channels: 2), maximumLag: 400, margin: 512)
        #expect(snr >= 25, "SNR \(snr) dB at lag \(lag)")
        #expect(abs(ToneAnalysis.frequency(of: ToneAnalysis.channel(1, of: decoded, channels: 2), sampleRate: 48_000) - 1000) < 2)
    }

    @Test func sbcdecDecodesWhatWeEncode() throws {
        let (left, pcm) = Self.tone()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sbc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let input = directory.appendingPathComponent("tone.sbc"), output = directory.appendingPathComponent("tone.au")
        try Data(try Self.encode(pcm)).write(to: input)
        let sbcdec = Process()
        sbcdec.executableURL = URL(fileURLWithPath: "/usr/bin/sbcdec")
        sbcdec.arguments = ["-f", output.path, input.path]
        try sbcdec.run()
        sbcdec.waitUntilExit()
        #expect(sbcdec.terminationStatus == 0)
        // A Sun .au file: ".snd", header length, size, encoding 3 (16-bit big-endian), rate, channels.
        let au = [UInt8](try Data(contentsOf: output))
        func word(_ at: Int) -> Int { Int(au[at]) << 24 | Int(au[at + 1]) << 16 | Int(au[at + 2]) << 8 | Int(au[at + 3]) }
        try #require(au.count > 24 && Array(au[0..<4]) == Array(".snd".utf8))
        #expect(word(12) == 3 && word(16) == 48_000 && word(20) == 2)
        let body = au[word(4)...]
        let samples = stride(from: body.startIndex, to: body.endIndex - 1, by: 2).map { Int16(bitPattern: UInt16(au[$0]) << 8 | UInt16(au[$0 + 1])) }
        let decodedLeft = ToneAnalysis.channel(0, of: samples, channels: 2)
        #expect(abs(ToneAnalysis.frequency(of: decodedLeft, sampleRate: 48_000) - 1000) < 2)
        let (snr, lag) = ToneAnalysis.alignedSNR(reference: left, decoded: decodedLeft, maximumLag: 400, margin: 512)
        #expect(snr >= 25, "SNR \(snr) dB at lag \(lag)")
    }

    @Test func badSettingsAndBadCallsAreRefusedWithTheReason() throws {
        #expect { try SBCEncoder(SBCSettings(sampleRate: 22_050)) } throws: { "\($0)".contains("not 22050 Hz") }
        #expect { try SBCEncoder(SBCSettings(channelMode: .mono, bitpool: 200)) } throws: { "\($0)".contains("must be 2 to 128, not 200") }
        #expect { try SBCEncoder(SBCSettings(blocks: 5)) } throws: { "\($0)".contains("not 5") }
        let encoder = try SBCEncoder(SBCSettings())
        var out = [UInt8](repeating: 0, count: 1000)
        let pcm = [UInt8](repeating: 0, count: 100)
        #expect {
            try pcm.withUnsafeBytes { input in try out.withUnsafeMutableBytes { try encoder.encode(input, into: $0) } }
        } throws: { "\($0)".contains("not a multiple") }
        let decoder = try SBCDecoder()
        #expect { try pcm.withUnsafeBytes { try decoder.decode($0) } } throws: { "\($0)".contains("could not decode") }
    }
}

@Suite("Resampling and channel conversion", .timeLimit(.minutes(1)))
struct ResamplerTests {
    @Test func fortyEightToFortyFourOneKeepsTheToneAndTheLength() throws {
        let input = ToneAnalysis.sine(frequency: 1000, sampleRate: 48_000, count: 48_000).map { Int16($0 * 32767) }
        let resampler = try Resampler(from: 48_000, to: 44_100, channels: 1, inputType: .int16)
        var output: [Int16] = []
        var block = [Int16](repeating: 0, count: resampler.outputCapacity(forInputFrames: 480))
        try input.withUnsafeBytes { bytes in
            for start in stride(from: 0, to: input.count, by: 480) {  // streamed in 10 ms blocks
                let (consumed, written) = try block.withUnsafeMutableBufferPointer { try resampler.process(bytes.baseAddress! + start * 2, frames: 480, into: $0) }
                #expect(consumed == 480)
                output += block[0..<written]
            }
        }
        while true {
            let written = try block.withUnsafeMutableBufferPointer { try resampler.flush(into: $0) }
            if written == 0 { break }
            output += block[0..<written]
        }
        #expect(abs(output.count - 44_100) <= 2)
        let frequency = ToneAnalysis.frequency(of: output.map { Double($0) / 32768 }, sampleRate: 44_100)
        #expect(abs(frequency - 1000) < 2, "measured \(frequency) Hz")
    }

    @Test func channelsAreDuplicatedAveragedOrTakenFirst() {
        var out = [Int16](repeating: 0, count: 4)
        ChannelConverter.convert([Int16(100), 200], channels: 1, frames: 2, into: &out, channels: 2)
        #expect(out == [100, 100, 200, 200])
        ChannelConverter.convert([Int16(100), 300, -100, -301], channels: 2, frames: 2, into: &out, channels: 1)
        #expect(Array(out[0..<2]) == [200, -201])
        ChannelConverter.convert([Int16(1), 2, 3, 4, 5, 6, 11, 12, 13, 14, 15, 16], channels: 6, frames: 2, into: &out, channels: 2)
        #expect(out == [1, 2, 11, 12])
        ChannelConverter.convert([Float(2), -2, 0.5, -1], channels: 2, frames: 2, into: &out, channels: 2)
        #expect(out == [32767, -32768, 16384, -32768])
        ChannelConverter.convert([Float.nan, .infinity, -.infinity, -0.25], channels: 2, frames: 2, into: &out, channels: 2)
        #expect(out == [0, 32767, -32768, -8192])
    }
}
