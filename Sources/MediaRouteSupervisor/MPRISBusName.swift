/// The name a player holds on the session bus, which MPRIS clients tell players apart by:
/// `org.mpris.MediaPlayer2.mediaroute.<session>` for a route's session,
/// `org.mpris.MediaPlayer2.mediaroute.remote_<key>` for a remote media session, and the stable
/// `org.mpris.MediaPlayer2.mediaroute` for the system-primary one (`playerctl -p mediaroute`).
struct MPRISBusName: Hashable, Sendable, CustomStringConvertible {
    let rawValue: String
    /// Held by one session at a time and passed on in one step: taken with replacement, from an
    /// owner that allowed it.
    let isStable: Bool

    static let stable = MPRISBusName(rawValue: "org.mpris.MediaPlayer2.mediaroute", isStable: true)

    static func routeSession(_ session: String) -> MPRISBusName {
        MPRISBusName(rawValue: stable.rawValue + "." + MPRISState.pathElement(session), isStable: false)
    }

    static func remoteSession(_ key: String) -> MPRISBusName {
        // The key is the supervisor's own (digits): after "remote_" it makes a valid name element.
        MPRISBusName(rawValue: stable.rawValue + ".remote_" + String(MPRISState.pathElement("_" + key).dropFirst()), isStable: false)
    }

    var description: String { rawValue }
}
