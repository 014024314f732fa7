import MediaRouteIPC
import MediaRouteWire

/// What mediarouted tells an app (IPC/README.md §11.4), typed, in the order it happened.
///
/// A notification that does not decode arrives as `.undecodable`, naming the method and the member,
/// so the controller reports it instead of acting on half a message or dropping it unseen.
enum DaemonEvent: Sendable {
    case routeActivated(ToApp.RouteActivated)
    case routeDeactivated(ToApp.RouteDeactivated)
    case routeUpdated(ToApp.RouteUpdated)
    case sessionState(ToApp.SessionState)
    case sessionEnded(ToApp.SessionEnded)
    case dataReceived(ToApp.DataReceived)
    case remoteCommand(ToApp.RemoteCommand)
    case streamEnded(Streams.Ended)
    case pushToStartToken(ToApp.PushToStartTokenChanged)
    case undecodable(RPCError)

    /// Handlers that hand every notification an app receives, typed, to `deliver` (on the loop
    /// thread, in arrival order).
    static func handlers(_ deliver: @escaping @Sendable (DaemonEvent) -> Void) -> RPCHandlers {
        var handlers = RPCHandlers()
        let invalid: @Sendable (RPCError) -> Void = { deliver(.undecodable($0)) }
        handlers.on(ToApp.RouteActivated.self, invalid: invalid) { deliver(.routeActivated($0)) }
        handlers.on(ToApp.RouteDeactivated.self, invalid: invalid) { deliver(.routeDeactivated($0)) }
        handlers.on(ToApp.RouteUpdated.self, invalid: invalid) { deliver(.routeUpdated($0)) }
        handlers.on(ToApp.SessionState.self, invalid: invalid) { deliver(.sessionState($0)) }
        handlers.on(ToApp.SessionEnded.self, invalid: invalid) { deliver(.sessionEnded($0)) }
        handlers.on(ToApp.DataReceived.self, invalid: invalid) { deliver(.dataReceived($0)) }
        handlers.on(ToApp.RemoteCommand.self, invalid: invalid) { deliver(.remoteCommand($0)) }
        handlers.on(Streams.Ended.self, invalid: invalid) { deliver(.streamEnded($0)) }
        handlers.on(ToApp.PushToStartTokenChanged.self, invalid: invalid) { deliver(.pushToStartToken($0)) }
        return handlers
    }
}
