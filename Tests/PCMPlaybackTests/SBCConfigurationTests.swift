import A2DP
import MediaCodecs
import PCMPlayback
import Testing

/// The SBC information element a source and a sink agree on (A2DP spec §4.3.2).
@Suite("A2DP: SBC configuration", .timeLimit(.minutes(1)))
struct SBCConfigurationTests {
    @Test func aSinkOfferingEverythingGetsHighQuality() throws {
        let chosen = try SBCConfiguration.select(from: [0xFF, 0xFF, 2, 53])
        #expect(chosen == SBCConfiguration(sampleRate: 48_000, channelMode: .jointStereo, blocks: 16, subbands: 8, allocation: .loudness, minimumBitpool: 2, maximumBitpool: 53))
        #expect(chosen.bytes == [0x11, 0x15, 2, 53])
        #expect(chosen.pcmFormat == PCMFormat(sampleRate: 48_000, channels: 2))
        #expect(chosen.bitrate == 119 * 8 * 48_000 / 128)
    }

    @Test(arguments: [
        // 44.1 kHz only, every mode: 44.1 kHz joint stereo, the sink's smaller maximum bitpool.
        ([0x2F, 0xFF, 2, 35], SBCConfiguration(sampleRate: 44_100, maximumBitpool: 35)),
        // 44.1 and 48 kHz, stereo only, 16 blocks, 8 subbands, loudness, bitpools from 10 up.
        ([0x32, 0x15, 10, 250], SBCConfiguration(channelMode: .stereo, minimumBitpool: 10)),
        // 44.1 kHz mono, 8 or 12 blocks, 4 subbands, SNR only.
        ([0x28, 0x6A, 2, 100], SBCConfiguration(sampleRate: 44_100, channelMode: .mono, blocks: 12, subbands: 4, allocation: .snr, maximumBitpool: 53)),
        // Only 32 kHz dual channel, 4 blocks: what is common, however modest.
        ([0x44, 0x85, 1, 20], SBCConfiguration(sampleRate: 32_000, channelMode: .dualChannel, blocks: 4, maximumBitpool: 20)),
    ] as [([UInt8], SBCConfiguration)])
    func selectionTakesTheBestCommonValues(sink: [UInt8], expected: SBCConfiguration) throws {
        #expect(try SBCConfiguration.select(from: sink) == expected)
    }

    @Test func aPreferredRateWinsWhenOffered() throws {
        #expect(try SBCConfiguration.select(from: [0x31, 0xFF, 2, 53], preferredSampleRate: 44_100).sampleRate == 44_100)
        #expect(try SBCConfiguration.select(from: [0x11, 0xFF, 2, 53], preferredSampleRate: 44_100).sampleRate == 48_000)
    }

    @Test(arguments: [
        ([0x0F, 0xFF, 2, 53], "no SBC sampling frequency"),
        ([0xF0, 0xFF, 2, 53], "no SBC channel mode"),
        ([0xFF, 0x0F, 2, 53], "no SBC block length"),
        ([0xFF, 0xF3, 2, 53], "no SBC number of subbands"),
        ([0xFF, 0xFC, 2, 53], "no SBC allocation method"),
        ([0xFF, 0xFF, 60, 250], "bitpool range 60 to 250 has nothing in common"),
        ([0xFF, 0xFF, 2], "3 bytes"),
    ] as [([UInt8], String)])
    func nothingInCommonIsAnErrorNamingTheField(sink: [UInt8], reason: String) {
        #expect { try SBCConfiguration.select(from: sink) } throws: { ($0 as? A2DPError)?.message.contains(reason) == true }
    }

    @Test func bytesReadBackAsTheSameConfiguration() throws {
        for configuration in [SBCConfiguration(), SBCConfiguration(sampleRate: 16_000, channelMode: .mono, blocks: 8, subbands: 4, allocation: .snr, minimumBitpool: 5, maximumBitpool: 40)] {
            #expect(try SBCConfiguration(bytes: configuration.bytes) == configuration)
        }
        #expect(SBCConfiguration.sourceCapabilities == [0xFF, 0xFF, 2, 250])
    }

    @Test(arguments: [
        ([0x31, 0x15, 2, 53], "exactly one sampling frequency, not 44100 and 48000"),
        ([0x10, 0x15, 2, 53], "exactly one channel mode, not none"),
        ([0x11, 0x35, 2, 53], "exactly one block length"),
        ([0x11, 0x1D, 2, 53], "exactly one number of subbands"),
        ([0x11, 0x14, 2, 53], "exactly one allocation method"),
        ([0x11, 0x15, 60, 53], "minimum 60 and maximum 53"),
        ([0x18, 0x15, 2, 200], "≤ 128 in mono"),
        ([0x11, 0x15, 0, 53], "minimum 0"),
        ([0x11, 0x15, 2, 53, 0], "4 bytes, not 5"),
    ] as [([UInt8], String)])
    func aBadConfigurationIsRefused(bytes: [UInt8], reason: String) {
        #expect { try SBCConfiguration(bytes: bytes) } throws: { ($0 as? A2DPError)?.message.contains(reason) == true }
    }
}
