/// ALAC frames as RAOP carries them: here the uncompressed ("escape") form, which every ALAC decoder
/// takes, of 352 stereo 16-bit frames. Its 1,412 bytes: a channel-pair element (tag 1, instance 0),
/// 12 unused bits, no size, no shift, the escape flag; the samples interleaved big-endian; the end
/// tag 7; zero bits to the byte.
public enum ALACFrame {
    public static let framesPerPacket = 352
    public static let sampleRate = 44100
    public static let channels = 2
    /// The encoded size of one full packet.
    public static let uncompressedSize = (23 + framesPerPacket * channels * 16 + 3 + 7) / 8

    /// Encodes up to 352 interleaved stereo frames; fewer are padded with silence (a stream's last packet).
    public static func uncompressed(_ interleaved: some Collection<Int16>) -> [UInt8] {
        var writer = BitWriter(capacity: uncompressedSize)
        writer.write(1, bits: 3)       // ID_CPE: a channel pair
        writer.write(0, bits: 4)       // element instance
        writer.write(0, bits: 12)      // unused
        writer.write(0, bits: 1)       // no sample count in the header: a full frame
        writer.write(0, bits: 2)       // no low bits shifted out
        writer.write(1, bits: 1)       // escape: the samples follow uncompressed
        var written = 0
        for sample in interleaved.prefix(framesPerPacket * channels) {
            writer.write(UInt32(UInt16(bitPattern: sample)), bits: 16)
            written += 1
        }
        for _ in written..<(framesPerPacket * channels) { writer.write(0, bits: 16) }
        writer.write(7, bits: 3)       // ID_END
        return writer.flushed
    }
}

/// Bits written most significant first, as ALAC reads them.
private struct BitWriter {
    private(set) var bytes: [UInt8]
    private var accumulator: UInt64 = 0
    private var pending = 0

    init(capacity: Int) { bytes = []; bytes.reserveCapacity(capacity) }

    mutating func write(_ value: UInt32, bits: Int) {
        accumulator = accumulator << bits | UInt64(value) & ((1 << bits) - 1)
        pending += bits
        while pending >= 8 {
            pending -= 8
            bytes.append(UInt8(truncatingIfNeeded: accumulator >> pending))
        }
        accumulator &= (1 << pending) - 1
    }

    /// The bytes so far, the last one padded with zero bits.
    var flushed: [UInt8] { pending == 0 ? bytes : bytes + [UInt8(truncatingIfNeeded: accumulator << (8 - pending))] }
}
