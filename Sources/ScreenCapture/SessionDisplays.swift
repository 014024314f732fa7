import Glibc

/// What the session's environment says about its displays.
enum SessionDisplays {
    static var x11: String? { getenv("DISPLAY").map { String(cString: $0) } }
    /// A Wayland session (with or without Xwayland beside it).
    static var isWayland: Bool { getenv("WAYLAND_DISPLAY").map { $0.pointee != 0 } ?? false }
    /// A Wayland session with no X server beside it (no Xwayland).
    static var isWaylandOnly: Bool { getenv("WAYLAND_DISPLAY") != nil && x11 == nil }
}
