/// Maps interleaved PCM from one channel count to another and Float32 to Int16: mono becomes both
/// channels, stereo becomes mono as the average of the two, and more than two channels give their
/// first two (front left and right in every usual layout). Stateless; no allocation.
public enum ChannelConverter {
    /// Float32 (±1.0 full scale) to Int16, clipped.
    public static func convert(_ input: UnsafePointer<Float>, channels inputChannels: Int, frames: Int,
                               into output: UnsafeMutablePointer<Int16>, channels outputChannels: Int) {
        map(input, inputChannels, frames, output, outputChannels) { clip($0 * 32768) } average: { clip(($0 + $1) * 16384) }
    }

    /// Full scale is ±32768; beyond it clips, and NaN (an app's bad sample) becomes silence.
    @inline(__always)
    private static func clip(_ scaled: Float) -> Int16 {
        if scaled >= 32767 { return .max }
        if scaled > -32768 { return Int16(scaled.rounded()) }
        return scaled.isNaN ? 0 : .min
    }

    /// Float32 to Float32: only the channels change (for a resampler that takes Float32).
    public static func convert(_ input: UnsafePointer<Float>, channels inputChannels: Int, frames: Int,
                               into output: UnsafeMutablePointer<Float>, channels outputChannels: Int) {
        map(input, inputChannels, frames, output, outputChannels) { $0 } average: { ($0 + $1) * 0.5 }
    }

    /// Int16 to Int16: only the channels change.
    public static func convert(_ input: UnsafePointer<Int16>, channels inputChannels: Int, frames: Int,
                               into output: UnsafeMutablePointer<Int16>, channels outputChannels: Int) {
        if inputChannels == outputChannels {
            output.update(from: input, count: frames * inputChannels)
            return
        }
        map(input, inputChannels, frames, output, outputChannels) { $0 } average: { Int16((Int32($0) + Int32($1)) >> 1) }
    }

    @inline(__always)
    private static func map<In, Out>(_ input: UnsafePointer<In>, _ inputChannels: Int, _ frames: Int, _ output: UnsafeMutablePointer<Out>,
                                     _ outputChannels: Int, _ sample: (In) -> Out, average: (In, In) -> Out) {
        switch (inputChannels, outputChannels) {
        case (1, 1):
            for i in 0..<frames { output[i] = sample(input[i]) }
        case (1, _):
            for i in 0..<frames {
                let value = sample(input[i])
                for c in 0..<outputChannels { output[i * outputChannels + c] = value }
            }
        case (_, 1):
            for i in 0..<frames { output[i] = average(input[i * inputChannels], input[i * inputChannels + 1]) }
        default:
            // Two or more into two or more: the first channels, as many as both have.
            let shared = min(inputChannels, outputChannels)
            for i in 0..<frames {
                for c in 0..<outputChannels {
                    output[i * outputChannels + c] = sample(input[i * inputChannels + min(c, shared - 1)])
                }
            }
        }
    }
}
