import CXCB
import Glibc

/// A tiny X client that paints rectangles on a display's root window: the known pictures screen
/// capture is tested and measured with. Every `paint` returns once the server has drawn it.
public final class X11Painter: @unchecked Sendable {  // used by one task or thread at a time
    /// A rectangle and its colour (0xRRGGBB).
    public struct Rectangle: Sendable {
        public var x, y, width, height: Int
        public var colour: UInt32
        public init(x: Int, y: Int, width: Int, height: Int, colour: UInt32) {
            (self.x, self.y, self.width, self.height, self.colour) = (x, y, width, height, colour)
        }
    }

    public let width: Int
    public let height: Int
    private let connection: OpaquePointer
    private let root: xcb_window_t
    private let context: xcb_gcontext_t

    public init(display: String) throws {
        var screenNumber: Int32 = 0
        guard let connection = xcb_connect(display, &screenNumber), xcb_connection_has_error(connection) == 0 else {
            throw PrivateDaemonError("the painter cannot connect to the X display \(display)")
        }
        let iterator = xcb_setup_roots_iterator(xcb_get_setup(connection))
        guard iterator.rem > 0, let screen = iterator.data?.pointee else {
            xcb_disconnect(connection)
            throw PrivateDaemonError("the X display \(display) has no screen")
        }
        self.connection = connection
        root = screen.root
        (width, height) = (Int(screen.width_in_pixels), Int(screen.height_in_pixels))
        context = xcb_generate_id(connection)
        xcb_create_gc(connection, context, root, 0, nil)
    }

    deinit { xcb_disconnect(connection) }

    /// Paints `rectangles` in order and waits until the server has drawn them (a round trip after
    /// the drawing requests: the server handles one client's requests in order).
    public func paint(_ rectangles: [Rectangle]) {
        for rectangle in rectangles {
            var colour = rectangle.colour
            xcb_change_gc(connection, context, XCB_GC_FOREGROUND.rawValue, &colour)
            var area = xcb_rectangle_t(x: Int16(rectangle.x), y: Int16(rectangle.y), width: UInt16(rectangle.width), height: UInt16(rectangle.height))
            xcb_poly_fill_rectangle(connection, root, context, 1, &area)
        }
        sync()
    }

    /// Returns once the server has handled everything sent before (one round trip).
    public func sync() {
        free(xcb_get_input_focus_reply(connection, xcb_get_input_focus(connection), nil))
    }

    /// The whole screen in one colour.
    public func fill(_ colour: UInt32) {
        paint([Rectangle(x: 0, y: 0, width: width, height: height, colour: colour)])
    }

    /// A known picture with detail for the encoder: eight colour bars across the top half, a grey
    /// ramp of 32 steps, and a checkerboard of 16-pixel squares across the bottom quarter.
    public func paintTestCard() {
        let bars: [UInt32] = [0xC0C0C0, 0xC0C000, 0x00C0C0, 0x00C000, 0xC000C0, 0xC00000, 0x0000C0, 0x101010]
        var rectangles = bars.enumerated().map { index, colour in
            Rectangle(x: index * width / 8, y: 0, width: width / 8 + 1, height: height / 2, colour: colour)
        }
        for step in 0..<32 {
            let level = UInt32(step * 255 / 31)
            rectangles.append(Rectangle(x: step * width / 32, y: height / 2, width: width / 32 + 1, height: height / 4, colour: level << 16 | level << 8 | level))
        }
        for row in 0..<((height / 4 + 15) / 16) {
            for column in 0..<((width + 15) / 16) {
                rectangles.append(Rectangle(x: column * 16, y: 3 * height / 4 + row * 16, width: 16, height: 16,
                                            colour: (row + column) % 2 == 0 ? 0xF0F0F0 : 0x202040))
            }
        }
        paint(rectangles)
    }
}
