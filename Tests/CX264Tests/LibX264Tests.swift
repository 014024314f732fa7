import CX264
import Testing

@Suite("libx264")
struct LibX264Tests {
    /// Opens a zero-latency encoder and encodes one I420 frame: the first output is a keyframe
    /// carrying SPS, PPS and an IDR slice as Annex-B NAL units.
    @Test func encodesOneFrameAsIDR() throws {
        var param = x264_param_t()
        #expect(x264_param_default_preset(&param, "veryfast", "zerolatency") == 0)
        param.i_width = 320
        param.i_height = 240
        param.i_csp = X264_CSP_I420
        param.i_threads = 1
        param.b_annexb = 1
        param.i_log_level = X264_LOG_NONE
        #expect(x264_param_apply_profile(&param, "baseline") == 0)
        let encoder = try #require(cx264_encoder_open(&param))
        defer { x264_encoder_close(encoder) }

        var picture = x264_picture_t()
        #expect(x264_picture_alloc(&picture, X264_CSP_I420, 320, 240) == 0)
        defer { x264_picture_clean(&picture) }
        for y in 0..<240 { for x in 0..<320 { picture.img.plane.0![y * Int(picture.img.i_stride.0) + x] = UInt8((x + y) & 0xff) } }
        for y in 0..<120 { for x in 0..<160 {
            picture.img.plane.1![y * Int(picture.img.i_stride.1) + x] = 128
            picture.img.plane.2![y * Int(picture.img.i_stride.2) + x] = 128
        } }
        picture.i_pts = 0

        var nals: UnsafeMutablePointer<x264_nal_t>? = nil
        var count: Int32 = 0
        var output = x264_picture_t()
        let size = x264_encoder_encode(encoder, &nals, &count, &picture, &output)
        #expect(size > 0)
        #expect(output.b_keyframe != 0)
        let types = (0..<Int(count)).map { nals![$0].i_type }
        #expect(types.contains(Int32(NAL_SPS.rawValue)))
        #expect(types.contains(Int32(NAL_PPS.rawValue)))
        #expect(types.contains(Int32(NAL_SLICE_IDR.rawValue)))
        let first = nals![0]
        #expect(Array(UnsafeBufferPointer(start: first.p_payload, count: 4)) == [0, 0, 0, 1])
    }

    @Test func refusesImpossibleDimensions() {
        var param = x264_param_t()
        _ = x264_param_default_preset(&param, "veryfast", "zerolatency")
        param.i_width = 0
        param.i_height = 0
        param.i_log_level = X264_LOG_NONE
        #expect(cx264_encoder_open(&param) == nil)
    }
}
