import PrivateDaemons
import ScreenCapture
import Testing

/// The scaler reads every byte order a PipeWire stream may offer, with rows padded past the width.
struct RGB32ToI420ScalerTests {
    @Test(arguments: PixelOrder.allCases)
    func everyByteOrderAndAPaddedStrideGiveTheSameFrame(order: PixelOrder) {
        let (width, height) = (64, 48)
        let bgrx = X11Painter.render(X11Painter.testCard(width: width, height: height), width: width, height: height)
        // The same picture in `order`, each row padded with 40 bytes of noise the scaler must skip.
        let stride = width * 4 + 40
        var pixels = [UInt8](repeating: 0xA5, count: stride * height)
        let (red, green, blue) = order.offsets
        for y in 0..<height {
            for x in 0..<width {
                let from = (y * width + x) * 4, to = y * stride + x * 4
                (pixels[to + red], pixels[to + green], pixels[to + blue]) = (bgrx[from + 2], bgrx[from + 1], bgrx[from])
            }
        }
        let reference = RGB32ToI420Scaler(sourceWidth: width, sourceHeight: height, width: 32, height: 24)
        let scaler = RGB32ToI420Scaler(sourceWidth: width, sourceHeight: height, stride: stride, order: order, width: 32, height: 24)
        var expected = [UInt8](repeating: 0, count: reference.frameBytes), frame = expected
        bgrx.withUnsafeBytes { source in expected.withUnsafeMutableBytes { reference.convert(source, into: $0) } }
        pixels.withUnsafeBytes { source in frame.withUnsafeMutableBytes { scaler.convert(source, into: $0) } }
        #expect(frame == expected)
        #expect(Set(frame).count > 8, "a picture with detail, not a flat frame")
    }
}
