/// Where red, green and blue sit in a screen's 32-bit pixels: X11's TrueColor screens are B, G, R, X
/// in memory; a PipeWire ScreenCast stream may offer any of these orders.
public enum PixelOrder: Sendable, Hashable, CaseIterable {
    case bgrx, bgra, rgbx, rgba, xrgb, argb, xbgr, abgr

    /// Byte offsets of red, green and blue within a pixel.
    public var offsets: (red: Int, green: Int, blue: Int) {
        switch self {
        case .bgrx, .bgra: (2, 1, 0)
        case .rgbx, .rgba: (0, 1, 2)
        case .xrgb, .argb: (1, 2, 3)
        case .xbgr, .abgr: (3, 2, 1)
        }
    }
}
