import MediaRouteIPC

/// Why the set of active routes changed, as apps are told (AVSystemRouting's route-change reasons).
enum RouteChangeReason: String, Sendable {
    /// A device was activated and is now an output.
    case newDeviceAvailable
    /// A device went away on its own: lost by discovery, its connection dropped, its driver died.
    /// Playback on it is paused, never moved elsewhere.
    case oldDeviceUnavailable
    /// Someone chose to end the route (the operator, or the app that activated it).
    case override
    /// An active device's description changed (name, capabilities, volume).
    case routeConfigurationChange
}

/// What the supervisor tells its subscribers (the app connections) as routes and sessions change.
/// Published on the supervisor's executor, in the order things happened.
enum RouteEvent: Sendable {
    case activated(route: JSONValue, protocolID: String)
    case deactivated(route: JSONValue, protocolID: String, reason: RouteChangeReason, message: String)
    /// Volume, device description, or whether a session plays on it.
    case updated(route: JSONValue, protocolID: String)
    /// A media session's playback state, for the app that started it.
    case playback(session: String, owner: ClientID, state: JSONObject)
    /// A media session ended without its app asking (route gone, driver failed, device error).
    case sessionEnded(session: String, owner: ClientID, state: JSONObject, error: JSONValue)
    /// A sample stream ended without its opener asking (its route or driver went away).
    case streamEnded(stream: String, owner: ClientID, error: JSONValue)
    /// Data from the device's `application` on `session`: for the session's app when `sessionOwner`
    /// is set, else for the route-level channel (of `route`) of the app whose identifier is `application`.
    case data(route: String, session: String, protocolID: String, application: String, sessionOwner: ClientID?, bytes: [UInt8])
}
