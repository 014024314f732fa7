import MediaRouteWire

typealias RouteChangeReason = ToApp.RouteDeactivated.Reason

/// What the supervisor tells its subscribers (the app connections) as routes and sessions change.
/// Published on the supervisor's executor, in the order things happened.
enum RouteEvent: Sendable {
    case activated(route: RouteDescription)
    case deactivated(route: RouteDescription, reason: RouteChangeReason, message: String)
    /// Volume, device description, or whether a session plays on it.
    case updated(route: RouteDescription)
    /// A media session's playback state, for the app that started it (none: the operator did) and
    /// for the desktop's media controls.
    case playback(session: String, owner: ClientID?, state: SessionPlayback)
    /// A media session ended without its app asking (route gone, driver failed, device error).
    case sessionEnded(session: String, owner: ClientID, state: SessionPlayback, error: MediaDeviceError)
    /// A sample stream ended without its opener asking (its route or driver went away).
    case streamEnded(stream: String, owner: ClientID, error: MediaDeviceError)
    /// Data from the device's `application` on `session`: for the session's app when `sessionOwner`
    /// is set, else for the route-level channel (of `route`) of the app whose identifier is `application`.
    /// A button on the device of `route`, for the clients whose sample streams play there.
    case remoteCommand(route: String, command: MediaRemoteCommand, streamOwners: Set<ClientID>)
    case data(route: String, session: String, protocolID: String, application: String, sessionOwner: ClientID?, data: Base64Payload)
    /// An app's push-to-start token was replaced.
    case pushToStartToken(application: String, token: String)
}

extension RouteEvent {
    /// Whether the routes to bring back after a restart may have changed.
    var changesSavedRoutes: Bool {
        switch self {
        case .activated, .deactivated, .updated, .playback, .sessionEnded: true
        case .streamEnded, .remoteCommand, .data, .pushToStartToken: false
        }
    }
}
