import CXCB
import Glibc

/// A tiny X client that paints rectangles on a display's root window (or on a window of its own
/// covering the screen, for a rootless Xwayland whose root window nobody sees): the known pictures screen
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
    private let drawable: xcb_window_t
    private let context: xcb_gcontext_t

    /// Connects to `display`, with the MIT-MAGIC-COOKIE in the Xauthority file `authority` if given
    /// (Xwayland's). With `window`, paints on an override-redirect window over the whole screen (no
    /// window manager moves or frames it), returned once the server has exposed it.
    public init(display: String, authority: String? = nil, window: Bool = false) throws {
        var screenNumber: Int32 = 0
        guard let connection = try Self.connect(display, authority: authority, screen: &screenNumber), xcb_connection_has_error(connection) == 0 else {
            throw PrivateDaemonError("the painter cannot connect to the X display \(display)")
        }
        let iterator = xcb_setup_roots_iterator(xcb_get_setup(connection))
        guard iterator.rem > 0, let screen = iterator.data?.pointee else {
            xcb_disconnect(connection)
            throw PrivateDaemonError("the X display \(display) has no screen")
        }
        self.connection = connection
        (width, height) = (Int(screen.width_in_pixels), Int(screen.height_in_pixels))
        if window {
            drawable = xcb_generate_id(connection)
            var values: [UInt32] = [0, 1, XCB_EVENT_MASK_EXPOSURE.rawValue]  // black background, override-redirect, exposure events
            xcb_create_window(connection, UInt8(XCB_COPY_FROM_PARENT), drawable, screen.root, 0, 0, screen.width_in_pixels, screen.height_in_pixels, 0,
                              UInt16(XCB_WINDOW_CLASS_INPUT_OUTPUT.rawValue), screen.root_visual,
                              XCB_CW_BACK_PIXEL.rawValue | XCB_CW_OVERRIDE_REDIRECT.rawValue | XCB_CW_EVENT_MASK.rawValue, &values)
            xcb_map_window(connection, drawable)
            xcb_flush(connection)
            guard Self.waitForExpose(connection, within: 15_000) else {
                xcb_disconnect(connection)
                throw PrivateDaemonError("the painter's window on \(display) was not exposed within 15 s")
            }
        } else {
            drawable = screen.root
        }
        context = xcb_generate_id(connection)
        xcb_create_gc(connection, context, drawable, 0, nil)
    }

    private static func connect(_ display: String, authority: String?, screen: inout Int32) throws -> OpaquePointer? {
        guard let authority else { return xcb_connect(display, &screen) }
        guard let file = fopen(authority, "rb") else { throw PrivateDaemonError("cannot read the Xauthority file \(authority)") }
        defer { fclose(file) }
        guard let entry = XauReadAuth(file) else { throw PrivateDaemonError("the Xauthority file \(authority) holds no entry") }
        defer { XauDisposeAuth(entry) }
        var info = xcb_auth_info_t(namelen: Int32(entry.pointee.name_length), name: entry.pointee.name,
                                   datalen: Int32(entry.pointee.data_length), data: entry.pointee.data)
        return xcb_connect_to_display_with_auth_info(display, &info, &screen)
    }

    /// True once an Expose event came within `milliseconds`.
    private static func waitForExpose(_ connection: OpaquePointer, within milliseconds: Int) -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(milliseconds)
        while ContinuousClock.now < deadline {
            while let event = xcb_poll_for_event(connection) {
                let type = event.pointee.response_type & 0x7F
                free(event)
                if type == XCB_EXPOSE { return true }
            }
            guard xcb_connection_has_error(connection) == 0 else { return false }
            var ready = pollfd(fd: xcb_get_file_descriptor(connection), events: Int16(POLLIN), revents: 0)
            _ = poll(&ready, 1, 100)
        }
        return false
    }

    deinit { xcb_disconnect(connection) }

    /// Paints `rectangles` in order and waits until the server has drawn them (a round trip after
    /// the drawing requests: the server handles one client's requests in order).
    public func paint(_ rectangles: [Rectangle]) {
        for rectangle in rectangles {
            var colour = rectangle.colour
            xcb_change_gc(connection, context, XCB_GC_FOREGROUND.rawValue, &colour)
            var area = xcb_rectangle_t(x: Int16(rectangle.x), y: Int16(rectangle.y), width: UInt16(rectangle.width), height: UInt16(rectangle.height))
            xcb_poly_fill_rectangle(connection, drawable, context, 1, &area)
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
    public func paintTestCard() { paint(Self.testCard(width: width, height: height)) }

    /// The test card's rectangles for a screen of `width` x `height`.
    public static func testCard(width: Int, height: Int) -> [Rectangle] {
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
        return rectangles
    }

    /// `rectangles` drawn in memory as an X server draws them: B, G, R, X bytes, `width * 4` a row,
    /// black where none falls. The picture a capture of the painted screen should give.
    public static func render(_ rectangles: [Rectangle], width: Int, height: Int) -> [UInt8] {
        var pixels = [UInt8](repeating: 0, count: width * height * 4)
        for rectangle in rectangles {
            for y in max(0, rectangle.y)..<min(height, rectangle.y + rectangle.height) {
                for x in max(0, rectangle.x)..<min(width, rectangle.x + rectangle.width) {
                    let at = (y * width + x) * 4
                    (pixels[at], pixels[at + 1], pixels[at + 2]) = (UInt8(rectangle.colour & 0xFF), UInt8(rectangle.colour >> 8 & 0xFF), UInt8(rectangle.colour >> 16 & 0xFF))
                }
            }
        }
        return pixels
    }
}
