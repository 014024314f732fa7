import COpus

/// Decodes Opus packets into interleaved Float32 PCM with libopus, concealing lost packets.
/// One thread at a time.
public final class OpusDecoder {
    public let sampleRate: Int
    public let channels: Int
    private let decoder: OpaquePointer

    public init(sampleRate: Int = 48_000, channels: Int = 2) throws(CodecError) {
        var error: Int32 = 0
        guard let decoder = opus_decoder_create(Int32(sampleRate), Int32(channels), &error) else {
            throw CodecError("libopus refused a decoder for \(sampleRate) Hz, \(channels) channel(s): \(String(cString: opus_strerror(error)))")
        }
        self.sampleRate = sampleRate
        self.channels = channels
        self.decoder = decoder
    }

    deinit { opus_decoder_destroy(decoder) }

    /// Decodes `packet` into `pcm` (room for `frameSize` × `channels` samples); a nil packet
    /// conceals one lost frame of `frameSize`. Returns the samples per channel decoded.
    public func decode(_ packet: UnsafeRawBufferPointer?, into pcm: UnsafeMutablePointer<Float>, frameSize: Int) throws(CodecError) -> Int {
        // libopus reads an empty packet as a lost one: concealment only when the caller means it.
        if let packet, packet.isEmpty { throw CodecError("an Opus packet of 0 bytes is not a frame") }
        let n = opus_decode_float(decoder, packet?.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(packet?.count ?? 0), pcm, Int32(frameSize), 0)
        guard n >= 0 else { throw CodecError("libopus could not decode a packet of \(packet?.count ?? 0) bytes: \(String(cString: opus_strerror(n)))") }
        return Int(n)
    }
}
