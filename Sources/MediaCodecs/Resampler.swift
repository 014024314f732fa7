import CSoxr

/// Converts interleaved PCM from one sample rate to another with libsoxr (high quality), as a
/// stream: blocks go in as they arrive, Int16 comes out, and `flush` empties what the filter holds
/// at the end. A device that takes only some rates (SBC: 44.1 or 48 kHz) plays any app's. One thread at a time.
public final class Resampler {
    public enum InputType: Sendable, Hashable {
        case int16, float32
        public var bytes: Int { self == .float32 ? 4 : 2 }
    }

    public let inputRate: Int
    public let outputRate: Int
    public let channels: Int
    public let inputType: InputType
    private let soxr: soxr_t

    public init(from inputRate: Int, to outputRate: Int, channels: Int, inputType: InputType) throws(CodecError) {
        guard inputRate > 0, outputRate > 0 else { throw CodecError("cannot resample from \(inputRate) Hz to \(outputRate) Hz: rates must be positive") }
        guard (1...32).contains(channels) else { throw CodecError("cannot resample \(channels) channels: 1 to 32 are possible") }
        var io = soxr_io_spec(inputType == .float32 ? SOXR_FLOAT32_I : SOXR_INT16_I, SOXR_INT16_I)
        io.flags = UInt(SOXR_NO_DITHER)  // identical channels stay identical; SBC's noise dwarfs the rounding
        var quality = soxr_quality_spec(UInt(SOXR_HQ), 0)
        var runtime = soxr_runtime_spec(1)
        var error: soxr_error_t?
        guard let soxr = soxr_create(Double(inputRate), Double(outputRate), UInt32(channels), &error, &io, &quality, &runtime), error == nil else {
            throw CodecError("libsoxr cannot resample \(inputRate) Hz to \(outputRate) Hz for \(channels) channel(s): \(error.map { String(cString: $0) } ?? "no reason given")")
        }
        self.inputRate = inputRate
        self.outputRate = outputRate
        self.channels = channels
        self.inputType = inputType
        self.soxr = soxr
    }

    deinit { soxr_delete(soxr) }

    /// Room enough in frames for what `inputFrames` more can produce (with what the filter holds).
    public func outputCapacity(forInputFrames inputFrames: Int) -> Int {
        (inputFrames * outputRate + inputRate - 1) / inputRate + 64
    }

    /// Resamples `frames` interleaved frames at `input` (of `inputType`) into `output`; returns the
    /// frames written. All the input is taken when `output` has `outputCapacity(forInputFrames:)`
    /// frames of room; otherwise the call stops when `output` is full and says how much it took.
    public func process(_ input: UnsafeRawPointer, frames: Int, into output: UnsafeMutableBufferPointer<Int16>) throws(CodecError) -> (consumed: Int, written: Int) {
        var taken = 0, made = 0
        let error = soxr_process(soxr, input, frames, &taken, output.baseAddress, output.count / channels, &made)
        if let error { throw CodecError("libsoxr failed resampling \(inputRate) Hz to \(outputRate) Hz: \(String(cString: error))") }
        return (taken, made)
    }

    /// The end of the stream: writes what the filter still holds (up to `output`'s room) and
    /// returns the frames written; call until it returns 0.
    public func flush(into output: UnsafeMutableBufferPointer<Int16>) throws(CodecError) -> Int {
        var made = 0
        let error = soxr_process(soxr, nil, 0, nil, output.baseAddress, output.count / channels, &made)
        if let error { throw CodecError("libsoxr failed flushing its \(inputRate) Hz to \(outputRate) Hz filter: \(String(cString: error))") }
        return made
    }

    /// Forgets everything in the filter: the next block starts a new stream.
    public func reset() { _ = soxr_clear(soxr) }
}
