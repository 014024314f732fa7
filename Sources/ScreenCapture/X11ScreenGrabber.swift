import CXCB
import Glibc

/// Grabs an X11 screen's root window through MIT-SHM (libxcb): the server copies the pixels into a
/// shared-memory segment of ours, one round trip per grab, nothing through the socket. Takes
/// 24- and 32-bit TrueColor screens (B, G, R, X bytes per pixel). One thread at a time.
public final class X11ScreenGrabber {
    public let display: String
    public let width: Int
    public let height: Int
    /// Grabs made (each one `ShmGetImage` request), for tests and statistics.
    public private(set) var grabs = 0
    private let connection: OpaquePointer
    private let root: xcb_window_t
    private let segment: xcb_shm_seg_t
    private let pixels: UnsafeMutableRawPointer
    private var closed = false

    /// Connects to `display` (`DISPLAY` when nil) and attaches a segment the size of its screen.
    public init(display: String? = nil) throws(ScreenCaptureError) {
        let name = display ?? SessionDisplays.x11
        guard let name, !name.isEmpty else {
            throw ScreenCaptureError(SessionDisplays.isWaylandOnly
                ? "this is a Wayland session without an X display, so there is no X11 screen to grab: a Wayland desktop's screen is shared through its ScreenCast portal (what `mediaroute mirror` does without --display; it needs xdg-desktop-portal and this desktop's backend: xdg-desktop-portal-gnome, -kde or -wlr)"
                : "no X display to capture: DISPLAY is not set and none was given")
        }
        self.display = name
        var screenNumber: Int32 = 0
        guard let connection = xcb_connect(name, &screenNumber), xcb_connection_has_error(connection) == 0 else {
            throw ScreenCaptureError("cannot connect to the X display \(name) (is an X server running there, and may this user connect?)")
        }
        var iterator = xcb_setup_roots_iterator(xcb_get_setup(connection))
        for _ in 0..<max(screenNumber, 0) { xcb_screen_next(&iterator) }
        guard iterator.rem > 0, let screen = iterator.data?.pointee else {
            xcb_disconnect(connection)
            throw ScreenCaptureError("the X display \(name) has no screen \(screenNumber)")
        }
        guard Self.bitsPerPixel(connection, depth: screen.root_depth) == 32 else {
            xcb_disconnect(connection)
            throw ScreenCaptureError("the X display \(name) is \(screen.root_depth) bits deep: only 24- and 32-bit TrueColor screens are captured")
        }
        guard let version = xcb_shm_query_version_reply(connection, xcb_shm_query_version(connection), nil) else {
            xcb_disconnect(connection)
            throw ScreenCaptureError("the X display \(name) has no MIT-SHM extension (a remote display cannot share memory with us)")
        }
        free(version)
        let (width, height) = (Int(screen.width_in_pixels), Int(screen.height_in_pixels))
        let id = shmget(IPC_PRIVATE, width * height * 4, IPC_CREAT | 0o600)
        guard id >= 0, let address = shmat(id, nil, 0), address != UnsafeMutableRawPointer(bitPattern: -1) else {
            let reason = String(cString: strerror(errno))
            if id >= 0 { shmctl(id, IPC_RMID, nil) }
            xcb_disconnect(connection)
            throw ScreenCaptureError("cannot make a \(width * height * 4)-byte shared-memory segment for \(name): \(reason)")
        }
        let segment = xcb_generate_id(connection)
        let attached = xcb_request_check(connection, xcb_shm_attach_checked(connection, segment, UInt32(id), 0))
        // Attached (or not) by now: the segment goes away with its last user, also if we crash.
        shmctl(id, IPC_RMID, nil)
        if let attached {
            free(attached)
            shmdt(address)
            xcb_disconnect(connection)
            throw ScreenCaptureError("the X display \(name) could not attach our shared memory (is the server on another machine or in another IPC namespace?)")
        }
        (self.connection, self.root, self.segment, self.pixels, self.width, self.height) = (connection, screen.root, segment, address, width, height)
    }

    deinit { close() }

    private static func bitsPerPixel(_ connection: OpaquePointer, depth: UInt8) -> Int? {
        guard depth == 24 || depth == 32 else { return nil }
        var formats = xcb_setup_pixmap_formats_iterator(xcb_get_setup(connection))
        while formats.rem > 0 {
            if let format = formats.data?.pointee, format.depth == depth { return Int(format.bits_per_pixel) }
            xcb_format_next(&formats)
        }
        return nil
    }

    /// Grabs the whole screen and hands its pixels (B, G, R, X; `width * 4` bytes a row) to `body`,
    /// valid only there.
    public func grab<T>(_ body: (UnsafeRawBufferPointer) -> T) throws(ScreenCaptureError) -> T {
        guard !closed else { throw ScreenCaptureError("the capture of \(display) is closed") }
        let cookie = xcb_shm_get_image(connection, root, 0, 0, UInt16(width), UInt16(height), ~0, UInt8(XCB_IMAGE_FORMAT_Z_PIXMAP.rawValue), segment, 0)
        var error: UnsafeMutablePointer<xcb_generic_error_t>?
        guard let reply = xcb_shm_get_image_reply(connection, cookie, &error) else {
            let code = error?.pointee.error_code ?? 0
            free(error)
            throw ScreenCaptureError(xcb_connection_has_error(connection) != 0
                ? "the X display \(display) went away"
                : "the X display \(display) refused to copy its screen (X error \(code))")
        }
        free(reply)
        grabs += 1
        return body(UnsafeRawBufferPointer(start: pixels, count: width * height * 4))
    }

    /// Detaches the segment and disconnects: no more requests reach the server. Safe to call twice.
    public func close() {
        guard !closed else { return }
        closed = true
        xcb_shm_detach(connection, segment)
        xcb_flush(connection)
        xcb_disconnect(connection)
        shmdt(pixels)
    }
}
