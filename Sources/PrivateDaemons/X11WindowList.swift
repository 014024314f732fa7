import CXCB
import Glibc

/// The windows shown on an X display, as a person would see them listed: each top-level window
/// that is mapped, with its title and where it is on the screen. For tests that check what a
/// program opened (and that it closed it again), without a window manager.
public enum X11WindowList {
    public struct Window: Sendable, CustomStringConvertible {
        public var id: UInt32
        public var title: String
        public var x, y, width, height: Int
        public var description: String { "\"\(title)\" \(width)x\(height)+\(x)+\(y)" }
    }

    /// The mapped children of the root window of `display`, bottom to top.
    public static func windows(on display: String) throws -> [Window] {
        let connection = try connect(display)
        defer { xcb_disconnect(connection) }
        let iterator = xcb_setup_roots_iterator(xcb_get_setup(connection))
        guard iterator.rem > 0, let root = iterator.data?.pointee.root else { throw PrivateDaemonError("the X display \(display) has no screen") }
        guard let tree = xcb_query_tree_reply(connection, xcb_query_tree(connection, root), nil) else {
            throw PrivateDaemonError("the X display \(display) did not list its windows")
        }
        defer { free(tree) }
        let children = Array(UnsafeBufferPointer(start: xcb_query_tree_children(tree), count: Int(xcb_query_tree_children_length(tree))))
        let netName = atom(connection, "_NET_WM_NAME"), utf8 = atom(connection, "UTF8_STRING")
        return children.compactMap { window in
            guard let attributes = xcb_get_window_attributes_reply(connection, xcb_get_window_attributes(connection, window), nil) else { return nil }
            let viewable = attributes.pointee.map_state == UInt8(XCB_MAP_STATE_VIEWABLE.rawValue)
            free(attributes)
            guard viewable, let geometry = xcb_get_geometry_reply(connection, xcb_get_geometry(connection, window), nil) else { return nil }
            defer { free(geometry) }
            let title = text(connection, window, netName, utf8) ?? text(connection, window, XCB_ATOM_WM_NAME.rawValue, XCB_ATOM_STRING.rawValue) ?? ""
            // A child of the root: its position is relative to the root already (inside the border).
            let border = Int(geometry.pointee.border_width)
            return Window(id: window, title: title, x: Int(geometry.pointee.x) + border, y: Int(geometry.pointee.y) + border,
                          width: Int(geometry.pointee.width), height: Int(geometry.pointee.height))
        }
    }

    /// Asks `window` to close as a window manager does when a person clicks its close button
    /// (ICCCM's WM_DELETE_WINDOW message); returns once the server has sent it on.
    public static func askToClose(_ window: Window, on display: String) throws {
        let connection = try connect(display)
        defer { xcb_disconnect(connection) }
        var event = xcb_client_message_event_t()
        event.response_type = UInt8(XCB_CLIENT_MESSAGE)
        event.format = 32
        event.window = window.id
        event.type = atom(connection, "WM_PROTOCOLS")
        event.data.data32 = (atom(connection, "WM_DELETE_WINDOW"), UInt32(XCB_CURRENT_TIME), 0, 0, 0)
        withUnsafeBytes(of: &event) { bytes in
            _ = xcb_send_event(connection, 0, window.id, XCB_EVENT_MASK_NO_EVENT.rawValue, bytes.baseAddress!.assumingMemoryBound(to: CChar.self))
        }
        free(xcb_get_input_focus_reply(connection, xcb_get_input_focus(connection), nil))  // a round trip: the server has it
    }

    private static func connect(_ display: String) throws -> OpaquePointer {
        var screenNumber: Int32 = 0
        guard let connection = xcb_connect(display, &screenNumber) else { throw PrivateDaemonError("cannot connect to the X display \(display)") }
        guard xcb_connection_has_error(connection) == 0 else {
            xcb_disconnect(connection)
            throw PrivateDaemonError("cannot connect to the X display \(display)")
        }
        return connection
    }

    private static func atom(_ connection: OpaquePointer, _ name: String) -> xcb_atom_t {
        guard let reply = xcb_intern_atom_reply(connection, xcb_intern_atom(connection, 1, UInt16(name.utf8.count), name), nil) else { return 0 }
        defer { free(reply) }
        return reply.pointee.atom
    }

    private static func text(_ connection: OpaquePointer, _ window: xcb_window_t, _ property: xcb_atom_t, _ type: xcb_atom_t) -> String? {
        guard property != 0, type != 0,
              let reply = xcb_get_property_reply(connection, xcb_get_property(connection, 0, window, property, type, 0, 1024), nil) else { return nil }
        defer { free(reply) }
        let length = Int(xcb_get_property_value_length(reply))
        guard length > 0, let value = xcb_get_property_value(reply) else { return nil }
        return String(decoding: UnsafeRawBufferPointer(start: value, count: length), as: UTF8.self)
    }
}
