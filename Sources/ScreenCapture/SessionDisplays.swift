import Glibc

/// What the session's environment says about its displays. A variable set to the empty string
/// counts as unset, as everywhere else in MediaRoute (the receiver's video output choice too).
enum SessionDisplays {
    /// The X display, when `DISPLAY` names one.
    static var x11: String? { nonEmpty("DISPLAY") }
    /// A Wayland session (with or without Xwayland beside it).
    static var isWayland: Bool { nonEmpty("WAYLAND_DISPLAY") != nil }
    /// A Wayland session with no X server beside it (no Xwayland).
    static var isWaylandOnly: Bool { isWayland && x11 == nil }

    private static func nonEmpty(_ name: String) -> String? {
        guard let value = getenv(name), value.pointee != 0 else { return nil }
        return String(cString: value)
    }
}
