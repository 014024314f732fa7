import MediaCodecs
import PCMPlayback

/// The SBC codec information element of A2DP (A2DP spec §4.3.2): four bytes that, from a sink,
/// say everything it can decode (several bits per field) and, in a configuration, the one value
/// of each field both sides use. An A2DP source offers `sourceCapabilities`, answers BlueZ's
/// `MediaEndpoint1.SelectConfiguration` with `select(from:)`, and checks what
/// `SetConfiguration` hands back with `init(bytes:)`.
public struct SBCConfiguration: Sendable, Hashable, CustomStringConvertible {
    public var sampleRate: Int
    public var channelMode: SBCSettings.ChannelMode
    public var blocks: Int
    public var subbands: Int
    public var allocation: SBCSettings.Allocation
    public var minimumBitpool: Int
    public var maximumBitpool: Int

    public init(sampleRate: Int = 48_000, channelMode: SBCSettings.ChannelMode = .jointStereo, blocks: Int = 16, subbands: Int = 8,
                allocation: SBCSettings.Allocation = .loudness, minimumBitpool: Int = 2, maximumBitpool: Int = 53) {
        self.sampleRate = sampleRate
        self.channelMode = channelMode
        self.blocks = blocks
        self.subbands = subbands
        self.allocation = allocation
        self.minimumBitpool = minimumBitpool
        self.maximumBitpool = maximumBitpool
    }

    /// The bitpool of high quality in joint stereo at 44.1 and 48 kHz (A2DP spec table 4.7).
    public static let highQualityBitpool = 53

    // The bits of each field (A2DP spec §4.3.2).
    static let rateBits: [(Int, UInt8)] = [(16_000, 0x80), (32_000, 0x40), (44_100, 0x20), (48_000, 0x10)]
    static let modeBits: [(SBCSettings.ChannelMode, UInt8)] = [(.mono, 0x08), (.dualChannel, 0x04), (.stereo, 0x02), (.jointStereo, 0x01)]
    static let blockBits: [(Int, UInt8)] = [(4, 0x80), (8, 0x40), (12, 0x20), (16, 0x10)]
    static let subbandBits: [(Int, UInt8)] = [(4, 0x08), (8, 0x04)]
    static let allocationBits: [(SBCSettings.Allocation, UInt8)] = [(.snr, 0x02), (.loudness, 0x01)]

    /// Everything this source encodes: every rate, mode, block length, subband count and
    /// allocation, bitpools 2 to 250 (libsbc codes them all).
    public static let sourceCapabilities: [UInt8] = [0xFF, 0xFF, UInt8(SBCSettings.bitpoolRange.lowerBound), UInt8(SBCSettings.bitpoolRange.upperBound)]

    /// What a source answers to a sink's capabilities: `preferredSampleRate` if offered, else
    /// 48 kHz, 44.1 kHz, 32 kHz, 16 kHz; joint stereo > stereo > dual channel > mono; the most
    /// blocks and subbands; loudness; bitpools from max(sink's minimum, 2) to min(sink's maximum,
    /// 53, the mode's limit). A field with nothing in common is an error naming it.
    public static func select(from sinkCapabilities: [UInt8], preferredSampleRate: Int = 48_000) throws(A2DPError) -> SBCConfiguration {
        guard sinkCapabilities.count == 4 else {
            throw A2DPError("the sink's SBC capabilities are \(sinkCapabilities.count) bytes, not the 4 of A2DP's SBC information element")
        }
        let (first, second) = (sinkCapabilities[0] & sourceCapabilities[0], sinkCapabilities[1] & sourceCapabilities[1])
        func pick<Value>(_ field: String, _ table: [(Value, UInt8)], in byte: UInt8, order: [Value]) throws(A2DPError) -> Value where Value: Equatable {
            for value in order {
                if let bit = table.first(where: { $0.0 == value })?.1, byte & bit != 0 { return value }
            }
            throw A2DPError("the sink offers no SBC \(field) this source can send (it offers none of \(order.map { "\($0)" }.joined(separator: ", ")))")
        }
        var rates = [preferredSampleRate]
        for rate in [48_000, 44_100, 32_000, 16_000] where rate != preferredSampleRate { rates.append(rate) }
        var configuration = SBCConfiguration()
        configuration.sampleRate = try pick("sampling frequency", rateBits, in: first, order: rates)
        configuration.channelMode = try pick("channel mode", modeBits, in: first, order: [.jointStereo, .stereo, .dualChannel, .mono])
        configuration.blocks = try pick("block length", blockBits, in: second, order: [16, 12, 8, 4])
        configuration.subbands = try pick("number of subbands", subbandBits, in: second, order: [8, 4])
        configuration.allocation = try pick("allocation method", allocationBits, in: second, order: [.loudness, .snr])
        let (sinkMinimum, sinkMaximum) = (Int(sinkCapabilities[2]), Int(sinkCapabilities[3]))
        let limit = configuration.encoderSettings.maximumBitpool
        configuration.minimumBitpool = max(sinkMinimum, SBCSettings.bitpoolRange.lowerBound)
        configuration.maximumBitpool = min(sinkMaximum, highQualityBitpool, limit)
        guard configuration.minimumBitpool <= configuration.maximumBitpool else {
            throw A2DPError("the sink's SBC bitpool range \(sinkMinimum) to \(sinkMaximum) has nothing in common with the \(SBCSettings.bitpoolRange.lowerBound) to \(min(highQualityBitpool, limit)) this source sends in \(configuration.channelMode)")
        }
        return configuration
    }

    /// Reads a configuration (one value per field), as BlueZ hands it to `SetConfiguration`:
    /// anything that is not exactly one valid choice per field, or bitpools out of order or out
    /// of SBC's range, is refused with the field named.
    public init(bytes: [UInt8]) throws(A2DPError) {
        guard bytes.count == 4 else { throw A2DPError("an SBC configuration is 4 bytes, not \(bytes.count)") }
        func one<Value>(_ field: String, _ table: [(Value, UInt8)], in byte: UInt8, mask: UInt8) throws(A2DPError) -> Value {
            let chosen = table.filter { byte & $0.1 != 0 }
            guard chosen.count == 1 else {
                throw A2DPError("an SBC configuration must choose exactly one \(field), not \(chosen.isEmpty ? "none" : chosen.map { "\($0.0)" }.joined(separator: " and ")) (bits 0x\(String(byte & mask, radix: 16)))")
            }
            return chosen[0].0
        }
        sampleRate = try one("sampling frequency", Self.rateBits, in: bytes[0], mask: 0xF0)
        channelMode = try one("channel mode", Self.modeBits, in: bytes[0], mask: 0x0F)
        blocks = try one("block length", Self.blockBits, in: bytes[1], mask: 0xF0)
        subbands = try one("number of subbands", Self.subbandBits, in: bytes[1], mask: 0x0C)
        allocation = try one("allocation method", Self.allocationBits, in: bytes[1], mask: 0x03)
        minimumBitpool = Int(bytes[2])
        maximumBitpool = Int(bytes[3])
        let limit = encoderSettings.maximumBitpool
        guard SBCSettings.bitpoolRange.lowerBound <= minimumBitpool, minimumBitpool <= maximumBitpool, maximumBitpool <= limit else {
            throw A2DPError("an SBC configuration's bitpools must satisfy 2 ≤ minimum ≤ maximum ≤ \(limit) in \(channelMode) with \(subbands) subbands, not minimum \(minimumBitpool) and maximum \(maximumBitpool)")
        }
    }

    /// The 4 bytes of the information element.
    public var bytes: [UInt8] {
        func bit<Value: Equatable>(_ table: [(Value, UInt8)], _ value: Value) -> UInt8 { table.first { $0.0 == value }?.1 ?? 0 }
        return [bit(Self.rateBits, sampleRate) | bit(Self.modeBits, channelMode),
                bit(Self.blockBits, blocks) | bit(Self.subbandBits, subbands) | bit(Self.allocationBits, allocation),
                UInt8(clamping: minimumBitpool), UInt8(clamping: maximumBitpool)]
    }

    /// What the encoder runs at: the configuration's values, at its maximum bitpool.
    public var encoderSettings: SBCSettings {
        SBCSettings(sampleRate: sampleRate, channelMode: channelMode, blocks: blocks, subbands: subbands, allocation: allocation, bitpool: maximumBitpool)
    }

    /// The PCM the encoder takes.
    public var pcmFormat: PCMFormat { PCMFormat(sampleRate: sampleRate, channels: channelMode.channels) }

    /// Bits per second of SBC frames at the maximum bitpool (RTP and media headers not counted).
    public var bitrate: Int { encoderSettings.bitrate }

    public var description: String {
        "SBC \(sampleRate) Hz \(channelMode), \(blocks) blocks, \(subbands) subbands, \(allocation), bitpool \(minimumBitpool)-\(maximumBitpool)"
    }
}
