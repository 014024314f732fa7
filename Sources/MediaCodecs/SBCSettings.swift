import CSBC

/// How an SBC stream is coded (A2DP spec §12.6): the values an A2DP configuration selects, in
/// the units people and the spec use rather than libsbc's constants.
public struct SBCSettings: Sendable, Hashable, CustomStringConvertible {
    public enum ChannelMode: Sendable, Hashable, CaseIterable, CustomStringConvertible {
        case mono, dualChannel, stereo, jointStereo
        public var channels: Int { self == .mono ? 1 : 2 }
        public var description: String {
            switch self {
            case .mono: "mono"
            case .dualChannel: "dual channel"
            case .stereo: "stereo"
            case .jointStereo: "joint stereo"
            }
        }
    }

    public enum Allocation: Sendable, Hashable, CaseIterable, CustomStringConvertible {
        case snr, loudness
        public var description: String { self == .snr ? "SNR" : "loudness" }
    }

    public static let sampleRates = [16_000, 32_000, 44_100, 48_000]
    public static let blockLengths = [4, 8, 12, 16]
    public static let subbandCounts = [4, 8]
    public static let bitpoolRange = 2...250

    public var sampleRate: Int
    public var channelMode: ChannelMode
    public var blocks: Int
    public var subbands: Int
    public var allocation: Allocation
    public var bitpool: Int

    /// 48 kHz joint stereo, 16 blocks, 8 subbands, loudness, bitpool 53: A2DP's "high quality".
    public init(sampleRate: Int = 48_000, channelMode: ChannelMode = .jointStereo, blocks: Int = 16, subbands: Int = 8,
                allocation: Allocation = .loudness, bitpool: Int = 53) {
        self.sampleRate = sampleRate
        self.channelMode = channelMode
        self.blocks = blocks
        self.subbands = subbands
        self.allocation = allocation
        self.bitpool = bitpool
    }

    public var channels: Int { channelMode.channels }
    /// PCM frames (samples per channel) in one SBC frame.
    public var samplesPerFrame: Int { blocks * subbands }

    /// The largest bitpool the spec allows for this channel mode and subband count.
    public var maximumBitpool: Int { min(Self.bitpoolRange.upperBound, (channelMode == .mono || channelMode == .dualChannel ? 16 : 32) * subbands) }

    /// Bytes of one encoded frame (A2DP spec §12.9), the same figure libsbc gives.
    public var frameBytes: Int {
        let header = 4 + (4 * subbands * channels) / 8
        switch channelMode {
        case .mono, .dualChannel: return header + (blocks * channels * bitpool + 7) / 8
        case .stereo: return header + (blocks * bitpool + 7) / 8
        case .jointStereo: return header + (subbands + blocks * bitpool + 7) / 8
        }
    }

    /// Bits per second on the link for the encoded stream (frame headers included).
    public var bitrate: Int { frameBytes * 8 * sampleRate / samplesPerFrame }

    /// Why these values cannot be coded; nil if they can.
    public var problem: String? {
        if !Self.sampleRates.contains(sampleRate) { return "SBC codes 16000, 32000, 44100 or 48000 Hz, not \(sampleRate) Hz" }
        if !Self.blockLengths.contains(blocks) { return "an SBC frame has 4, 8, 12 or 16 blocks, not \(blocks)" }
        if !Self.subbandCounts.contains(subbands) { return "SBC uses 4 or 8 subbands, not \(subbands)" }
        if !(Self.bitpoolRange.lowerBound...maximumBitpool).contains(bitpool) {
            return "the SBC bitpool for \(channelMode) with \(subbands) subbands must be \(Self.bitpoolRange.lowerBound) to \(maximumBitpool), not \(bitpool)"
        }
        return nil
    }

    public var description: String {
        "SBC \(sampleRate) Hz \(channelMode), \(blocks) blocks, \(subbands) subbands, \(allocation), bitpool \(bitpool)"
    }

    /// Writes these settings into a libsbc state (after `sbc_init`).
    func apply(to sbc: inout sbc_t) {
        sbc.frequency = UInt8([16_000: SBC_FREQ_16000, 32_000: SBC_FREQ_32000, 44_100: SBC_FREQ_44100, 48_000: SBC_FREQ_48000][sampleRate] ?? SBC_FREQ_48000)
        sbc.blocks = UInt8([4: SBC_BLK_4, 8: SBC_BLK_8, 12: SBC_BLK_12, 16: SBC_BLK_16][blocks] ?? SBC_BLK_16)
        sbc.subbands = UInt8(subbands == 4 ? SBC_SB_4 : SBC_SB_8)
        switch channelMode {
        case .mono: sbc.mode = UInt8(SBC_MODE_MONO)
        case .dualChannel: sbc.mode = UInt8(SBC_MODE_DUAL_CHANNEL)
        case .stereo: sbc.mode = UInt8(SBC_MODE_STEREO)
        case .jointStereo: sbc.mode = UInt8(SBC_MODE_JOINT_STEREO)
        }
        sbc.allocation = UInt8(allocation == .snr ? SBC_AM_SNR : SBC_AM_LOUDNESS)
        sbc.bitpool = UInt8(bitpool)
        sbc.endian = UInt8(1.littleEndian == 1 ? SBC_LE : SBC_BE)  // native-endian PCM
    }
}
