import CSBC

/// Encodes interleaved native-endian Int16 PCM into SBC frames with libsbc (the codec every A2DP
/// sink must take). Encodes into the caller's buffer: nothing is allocated per call. One thread at a time.
public final class SBCEncoder {
    public let settings: SBCSettings
    /// Bytes of one encoded frame.
    public let frameBytes: Int
    /// PCM bytes one frame takes (`settings.samplesPerFrame` frames of `settings.channels` Int16 samples).
    public let codesize: Int
    private let sbc: UnsafeMutablePointer<sbc_t>

    public init(_ settings: SBCSettings) throws(CodecError) {
        if let problem = settings.problem { throw CodecError("cannot make an SBC encoder: \(problem)") }
        sbc = UnsafeMutablePointer<sbc_t>.allocate(capacity: 1)
        let status = sbc_init(sbc, 0)
        guard status == 0 else {
            sbc.deallocate()
            throw CodecError("libsbc could not set up an encoder (sbc_init returned \(status))")
        }
        settings.apply(to: &sbc.pointee)
        self.settings = settings
        frameBytes = sbc_get_frame_length(sbc)
        codesize = sbc_get_codesize(sbc)
        guard frameBytes == settings.frameBytes, codesize == settings.samplesPerFrame * settings.channels * 2 else {
            let (frame, code) = (frameBytes, codesize)
            sbc_finish(sbc)
            sbc.deallocate()
            throw CodecError("libsbc sizes \(settings) as \(frame)-byte frames of \(code) PCM bytes, not the spec's \(settings.frameBytes) and \(settings.samplesPerFrame * settings.channels * 2)")
        }
    }

    deinit {
        sbc_finish(sbc)
        sbc.deallocate()
    }

    /// Encodes every whole frame of `pcm` (a multiple of `codesize` bytes) into `output` (room for
    /// as many `frameBytes`); returns the bytes written.
    public func encode(_ pcm: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) throws(CodecError) -> Int {
        let frames = pcm.count / codesize
        guard pcm.count == frames * codesize else {
            throw CodecError("SBC encodes whole frames of \(codesize) PCM bytes; \(pcm.count) bytes is not a multiple of that")
        }
        guard output.count >= frames * frameBytes else {
            throw CodecError("\(frames) SBC frame(s) need \(frames * frameBytes) bytes of output, not \(output.count)")
        }
        guard frames > 0, let input = pcm.baseAddress, let out = output.baseAddress else { return 0 }
        var written = 0
        for frame in 0..<frames {
            var produced = 0
            let consumed = sbc_encode(sbc, input + frame * codesize, codesize, out + written, output.count - written, &produced)
            guard consumed == codesize, produced == frameBytes else {
                throw CodecError("libsbc could not encode frame \(frame) of \(frames) (sbc_encode returned \(consumed), wrote \(produced) bytes)")
            }
            written += produced
        }
        return written
    }
}
