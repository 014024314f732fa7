import CSBC

/// Decodes SBC frames back to interleaved Int16 PCM with libsbc: how tests (and tools) check what
/// reached a Bluetooth transport. Each frame's header says how it was coded. One thread at a time.
public final class SBCDecoder {
    private let sbc: UnsafeMutablePointer<sbc_t>
    /// The largest PCM block one frame decodes to: 16 blocks × 8 subbands × 2 channels × 2 bytes.
    public static let maximumFramePCMBytes = 512

    public init() throws(CodecError) {
        sbc = UnsafeMutablePointer<sbc_t>.allocate(capacity: 1)
        let status = sbc_init(sbc, 0)
        guard status == 0 else {
            sbc.deallocate()
            throw CodecError("libsbc could not set up a decoder (sbc_init returned \(status))")
        }
        sbc.pointee.endian = UInt8(1.littleEndian == 1 ? SBC_LE : SBC_BE)
    }

    deinit {
        sbc_finish(sbc)
        sbc.deallocate()
    }

    /// The sample rate and channels of the last frame decoded (nil before the first).
    public private(set) var sampleRate: Int?
    public private(set) var channels: Int?

    /// Decodes the frame at the start of `input` into `output`; returns the input bytes it took
    /// and the PCM bytes it wrote.
    public func decodeFrame(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) throws(CodecError) -> (consumed: Int, written: Int) {
        guard let source = input.baseAddress, let out = output.baseAddress, !input.isEmpty else { throw CodecError("no SBC frame to decode: the input is empty") }
        var written = 0
        let consumed = sbc_decode(sbc, source, input.count, out, output.count, &written)
        guard consumed > 0 else {
            throw CodecError("libsbc could not decode an SBC frame from \(input.count) bytes (sbc_decode returned \(consumed)): not an SBC frame, or cut short")
        }
        sampleRate = [16_000, 32_000, 44_100, 48_000][Int(sbc.pointee.frequency) & 3]
        channels = Int(sbc.pointee.mode) == SBC_MODE_MONO ? 1 : 2
        return (consumed, written)
    }

    /// Decodes a run of whole frames (an A2DP payload after its header, or an .sbc file).
    public func decode(_ frames: UnsafeRawBufferPointer) throws(CodecError) -> [Int16] {
        var pcm: [Int16] = []
        let block = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.maximumFramePCMBytes, alignment: 2)
        defer { block.deallocate() }
        var offset = 0
        while offset < frames.count {
            let (consumed, written) = try decodeFrame(UnsafeRawBufferPointer(rebasing: frames[offset...]), into: block)
            pcm.append(contentsOf: UnsafeRawBufferPointer(rebasing: block[0..<written]).bindMemory(to: Int16.self))
            offset += consumed
        }
        return pcm
    }
}
