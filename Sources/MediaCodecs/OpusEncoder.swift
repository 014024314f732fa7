import COpus

/// Encodes PCM into Opus packets (RFC 6716) with libopus, one frame at a time. One thread at a time.
public final class OpusEncoder {
    public enum Application: Sendable, Hashable {
        /// The lowest delay (no speech-only tools): the default for real-time streaming.
        case restrictedLowDelay
        case audio
        case voip
        var value: Int32 {
            switch self {
            case .restrictedLowDelay: OPUS_APPLICATION_RESTRICTED_LOWDELAY
            case .audio: OPUS_APPLICATION_AUDIO
            case .voip: OPUS_APPLICATION_VOIP
            }
        }
    }

    public struct Settings: Sendable, Hashable {
        public var sampleRate = 48_000
        public var channels = 2
        public var bitrate = 128_000
        /// Frame length in microseconds: 2,500, 5,000, 10,000, 20,000, 40,000 or 60,000.
        public var frameMicroseconds = 20_000
        /// 0 (fastest) to 10 (best).
        public var complexity = 10
        public var application = Application.restrictedLowDelay
        public init() {}

        /// Samples per channel in one frame.
        public var frameSize: Int { sampleRate * frameMicroseconds / 1_000_000 }
    }

    public let settings: Settings
    private let encoder: OpaquePointer
    /// The largest packet libopus is asked to produce (its own recommended ceiling).
    public static let maximumPacketSize = 4000

    public init(_ settings: Settings) throws(CodecError) {
        guard [2_500, 5_000, 10_000, 20_000, 40_000, 60_000].contains(settings.frameMicroseconds) else {
            throw CodecError("an Opus frame lasts 2.5, 5, 10, 20, 40 or 60 ms, not \(Double(settings.frameMicroseconds) / 1000) ms")
        }
        guard (6_000...510_000).contains(settings.bitrate) else { throw CodecError("the Opus bitrate must be 6 to 510 kbit/s, not \(settings.bitrate) bit/s") }
        guard (0...10).contains(settings.complexity) else { throw CodecError("the Opus complexity must be 0 to 10, not \(settings.complexity)") }
        var error: Int32 = 0
        guard let encoder = opus_encoder_create(Int32(settings.sampleRate), Int32(settings.channels), settings.application.value, &error) else {
            throw CodecError("libopus refused \(settings.sampleRate) Hz, \(settings.channels) channel(s): \(String(cString: opus_strerror(error)))")
        }
        guard copus_set_bitrate(encoder, Int32(settings.bitrate)) == OPUS_OK, copus_set_complexity(encoder, Int32(settings.complexity)) == OPUS_OK else {
            opus_encoder_destroy(encoder)
            throw CodecError("libopus refused a bitrate of \(settings.bitrate) bit/s or complexity \(settings.complexity)")
        }
        self.settings = settings
        self.encoder = encoder
    }

    deinit { opus_encoder_destroy(encoder) }

    /// Encodes one frame of interleaved Float32 samples (`frameSize` × `channels` of them) into
    /// `packet`; returns the packet's length.
    public func encode(_ pcm: UnsafePointer<Float>, into packet: UnsafeMutableRawBufferPointer) throws(CodecError) -> Int {
        let n = opus_encode_float(encoder, pcm, Int32(settings.frameSize), packet.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(packet.count))
        guard n > 0 else { throw CodecError("libopus could not encode a frame: \(String(cString: opus_strerror(n)))") }
        return Int(n)
    }

    /// The same, for interleaved Int16 samples.
    public func encode(_ pcm: UnsafePointer<Int16>, into packet: UnsafeMutableRawBufferPointer) throws(CodecError) -> Int {
        let n = opus_encode(encoder, pcm, Int32(settings.frameSize), packet.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(packet.count))
        guard n > 0 else { throw CodecError("libopus could not encode a frame: \(String(cString: opus_strerror(n)))") }
        return Int(n)
    }
}
