import MediaRouteWire

/// What brings a route back after the daemon restarts: the device and its protocol, whether it was
/// already waiting for its device (and until when), and the media session on it with its position.
/// The connection that activated it and the app whose session it was are not kept: they are gone
/// with the daemon, and the route comes back as the operator's.
struct SavedRoute: Codable, Sendable, Equatable {
    struct Session: Codable, Sendable, Equatable {
        var url: String
        var application: String?
        /// The last state, paused on the way back whatever it was.
        var state: PlaybackStatus
    }

    let `protocol`: String
    var device: MediaOutputDevice
    var simultaneousSessions: Bool
    /// Set when the device was away already: the wait does not start afresh at the restart.
    var reconnectingUntil: Double?
    var session: Session?

    /// The same route with every position at zero: what tells a change worth writing at once from
    /// a position that only moved on.
    var positionless: SavedRoute {
        var copy = self
        copy.session?.state.position = 0
        return copy
    }
}
