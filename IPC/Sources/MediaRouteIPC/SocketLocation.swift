import Glibc

/// Where mediarouted listens unless told otherwise; the daemon and every client agree on it.
public enum SocketLocation {
    /// `$MEDIAROUTE_SOCKET`, else `$XDG_RUNTIME_DIR/mediaroute/mediarouted.sock`, else (root)
    /// `/run/mediaroute/mediarouted.sock`, else `/tmp/mediaroute-UID/mediarouted.sock`.
    public static var defaultPath: String {
        if let explicit = environment("MEDIAROUTE_SOCKET"), !explicit.isEmpty { return explicit }
        if let runtime = environment("XDG_RUNTIME_DIR"), !runtime.isEmpty { return runtime + "/mediaroute/mediarouted.sock" }
        if getuid() == 0 { return "/run/mediaroute/mediarouted.sock" }
        return "/tmp/mediaroute-\(getuid())/mediarouted.sock"
    }

    static func environment(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }
}
