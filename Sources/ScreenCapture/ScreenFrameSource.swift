/// One picture of a screen as its source holds it: 32-bit pixels in `order`, rows `stride` bytes apart.
public struct ScreenPixels {
    public let bytes: UnsafeRawBufferPointer
    public let width: Int
    public let height: Int
    public let stride: Int
    public let order: PixelOrder
}

/// Where a capture session's pictures come from: an X11 screen grabbed at each tick, or the newest
/// frame a PipeWire ScreenCast stream has sent (compositors send one only when the screen changed).
protocol ScreenFrameSource: AnyObject {
    /// The screen's size when the session was made.
    var width: Int { get }
    var height: Int { get }
    /// The screen now, valid only within `body`.
    func grabPixels<T>(_ body: (ScreenPixels) -> T) throws(ScreenCaptureError) -> T
    /// Lets the screen go (connection, stream); safe to call twice.
    func close()
}

extension X11ScreenGrabber: ScreenFrameSource {
    func grabPixels<T>(_ body: (ScreenPixels) -> T) throws(ScreenCaptureError) -> T {
        let (width, height) = (width, height)
        return try grab { body(ScreenPixels(bytes: $0, width: width, height: height, stride: width * 4, order: .bgrx)) }
    }
}
