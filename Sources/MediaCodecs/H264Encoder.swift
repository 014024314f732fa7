import CX264

/// Encodes I420 frames into H.264 (Annex-B NAL units) with libx264, for real-time streaming: no
/// B-frames, no lookahead (`zerolatency`), one output per input. One thread at a time.
public final class H264Encoder {
    public struct Settings: Sendable, Hashable {
        public var width: Int
        public var height: Int
        public var frameRate: Int
        public var preset = "veryfast"
        public var tune = "zerolatency"
        /// Encoder threads (x264's own); 1 keeps one core for everything else.
        public var threads = 1
        /// Constant quality (x264's default, 23) when nil, else an average bitrate in kbit/s with a
        /// matching VBV cap, as a link of known capacity wants.
        public var bitrateKbps: Int?
        /// A keyframe at least this often, in frames (also on request: `requestKeyframe()`).
        public var keyframeInterval: Int

        public init(width: Int, height: Int, frameRate: Int) {
            self.width = width
            self.height = height
            self.frameRate = frameRate
            keyframeInterval = frameRate * 2
        }
    }

    /// One NAL unit of an encoded frame: its type and bytes, start code included (Annex-B).
    public struct NALUnit {
        public let type: Int
        public let bytes: UnsafeRawBufferPointer
        /// The NAL without its start code: what RTP (RFC 6184) carries.
        public var payload: UnsafeRawBufferPointer {
            let skip = bytes.count > 3 && bytes[2] == 1 ? 3 : 4
            return UnsafeRawBufferPointer(rebasing: bytes[min(skip, bytes.count)...])
        }
    }

    public let settings: Settings
    private let encoder: OpaquePointer
    private var picture = x264_picture_t()
    private var keyframeRequested = false

    public init(_ settings: Settings) throws(CodecError) {
        var parameters = x264_param_t()
        guard x264_param_default_preset(&parameters, settings.preset, settings.tune) == 0 else {
            throw CodecError("x264 has no preset \"\(settings.preset)\" or tune \"\(settings.tune)\"")
        }
        parameters.i_width = Int32(settings.width)
        parameters.i_height = Int32(settings.height)
        parameters.i_csp = X264_CSP_I420
        parameters.i_fps_num = UInt32(settings.frameRate)
        parameters.i_fps_den = 1
        parameters.i_threads = Int32(settings.threads)
        parameters.i_keyint_max = Int32(settings.keyframeInterval)
        parameters.b_annexb = 1
        parameters.b_repeat_headers = 1  // SPS and PPS before every keyframe: a receiver can join at any keyframe
        parameters.i_log_level = X264_LOG_NONE
        if let kbps = settings.bitrateKbps {
            parameters.rc.i_rc_method = X264_RC_ABR
            parameters.rc.i_bitrate = Int32(kbps)
            parameters.rc.i_vbv_max_bitrate = Int32(kbps)
            parameters.rc.i_vbv_buffer_size = Int32(max(kbps * 2 / max(settings.frameRate, 1), 1))  // two frames' worth
        }
        guard let encoder = cx264_encoder_open(&parameters) else {
            throw CodecError("x264 refused to encode \(settings.width)x\(settings.height) at \(settings.frameRate) fps (dimensions must be even and positive)")
        }
        self.settings = settings
        self.encoder = encoder
        x264_picture_init(&picture)
        picture.img.i_csp = X264_CSP_I420
        picture.img.i_plane = 3
        picture.img.i_stride = (Int32(settings.width), Int32((settings.width + 1) / 2), Int32((settings.width + 1) / 2), 0)
    }

    deinit { x264_encoder_close(encoder) }

    /// The next frame will be a keyframe (a receiver lost data and cannot decode until one comes).
    public func requestKeyframe() { keyframeRequested = true }

    /// Encodes one tightly packed I420 frame and hands each NAL unit of the result to `body`
    /// (valid only there). Returns whether the frame is a keyframe. The frame is not copied.
    @discardableResult
    public func encode(_ frame: UnsafeRawBufferPointer, pts: Int64, _ body: (NALUnit) throws -> Void) throws -> Bool {
        let lumaSize = settings.width * settings.height
        let chromaSize = ((settings.width + 1) / 2) * ((settings.height + 1) / 2)
        guard frame.count >= lumaSize + 2 * chromaSize, let base = frame.baseAddress else {
            throw CodecError("an I420 frame of \(settings.width)x\(settings.height) is \(lumaSize + 2 * chromaSize) bytes, not \(frame.count)")
        }
        let y = UnsafeMutablePointer(mutating: base.assumingMemoryBound(to: UInt8.self))
        picture.img.plane = (y, y + lumaSize, y + lumaSize + chromaSize, nil)
        picture.i_pts = pts
        picture.i_type = keyframeRequested ? X264_TYPE_IDR : X264_TYPE_AUTO
        keyframeRequested = false
        var nals: UnsafeMutablePointer<x264_nal_t>? = nil
        var count: Int32 = 0
        var output = x264_picture_t()
        let size = x264_encoder_encode(encoder, &nals, &count, &picture, &output)
        guard size >= 0 else { throw CodecError("x264 could not encode frame \(pts)") }
        for i in 0..<Int(count) {
            let nal = nals![i]
            try body(NALUnit(type: Int(nal.i_type), bytes: UnsafeRawBufferPointer(start: nal.p_payload, count: Int(nal.i_payload))))
        }
        return output.b_keyframe != 0
    }
}
