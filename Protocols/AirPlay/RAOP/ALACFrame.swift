/// ALAC frames as RAOP carries them: here the uncompressed ("escape") form, which every ALAC decoder
/// takes, of 352 stereo 16-bit frames. Its 1,412 bytes: a channel-pair element (tag 1, instance 0),
/// 12 unused bits, no size, no shift, the escape flag (23 bits in all); the samples interleaved
/// big-endian; the end tag 7; zero bits to the byte.
public enum ALACFrame {
    public static let framesPerPacket = 352
    public static let sampleRate = 44100
    public static let channels = 2
    /// The encoded size of one full packet.
    public static let uncompressedSize = (23 + framesPerPacket * channels * 16 + 3 + 7) / 8

    /// Encodes up to 352 interleaved stereo frames; fewer are padded with silence (a stream's last packet).
    public static func uncompressed(_ interleaved: some Collection<Int16>) -> [UInt8] {
        var samples = Array(interleaved.prefix(framesPerPacket * channels))
        samples += repeatElement(0, count: framesPerPacket * channels - samples.count)
        return [UInt8](unsafeUninitializedCapacity: uncompressedSize) { bytes, count in
            samples.withUnsafeBufferPointer { encode($0.baseAddress!, into: UnsafeMutableRawPointer(bytes.baseAddress!)) }
            count = uncompressedSize
        }
    }

    /// Writes one frame of exactly 352 stereo frames (704 samples) at `out`, `uncompressedSize`
    /// bytes: the sending thread's path, with no allocation. The 23-bit header leaves every sample
    /// 7 bits off the byte grid, so each output pair is 7 bits carried from the last sample and the
    /// top 9 of this one.
    public static func encode(_ samples: UnsafePointer<Int16>, into out: UnsafeMutableRawPointer) {
        let bytes = out.assumingMemoryBound(to: UInt8.self)
        // The header, 001 0000 000000000000 0 00 1: its first 16 bits out, its last 7 (…0000001) carried.
        bytes[0] = 0x20
        bytes[1] = 0x00
        var carried: UInt32 = 0x01
        for index in 0..<(framesPerPacket * channels) {
            let sample = UInt32(UInt16(bitPattern: samples[index]))
            let bits = carried << 16 | sample
            bytes[2 + 2 * index] = UInt8(truncatingIfNeeded: bits >> 15)
            bytes[3 + 2 * index] = UInt8(truncatingIfNeeded: bits >> 7)
            carried = sample & 0x7f
        }
        // The end tag 111 after the last 7 bits, then zeros to the byte.
        let end = carried << 3 | 0x7
        bytes[uncompressedSize - 2] = UInt8(truncatingIfNeeded: end >> 2)
        bytes[uncompressedSize - 1] = UInt8(truncatingIfNeeded: end << 6)
    }
}
