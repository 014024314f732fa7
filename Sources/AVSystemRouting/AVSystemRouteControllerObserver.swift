/// Whether a route became active or inactive.
public enum AVSystemRouteEventReason: Sendable, Hashable {
    /// A route of one of the app's protocols is active: keep it to start sessions on it.
    case activate
    /// The route ended; its sessions ended with it. Drop it.
    case deactivate
}

/// A route event for an app's observers.
public struct AVSystemRouteEvent: Sendable {
    public let reason: AVSystemRouteEventReason
    public let route: AVSystemRoute
}

/// Receives route events for the protocols the app declared. Implement the async form (preferred)
/// or the callback form; the return value says whether the app handled the event.
///
/// Observers are called on the main actor, one event at a time, in the order routes changed.
@MainActor
public protocol AVSystemRouteControllerObserver: AnyObject, Sendable {
    func systemRouteController(_ controller: AVSystemRouteController, handle event: AVSystemRouteEvent) async -> Bool
    func systemRouteController(_ controller: AVSystemRouteController, handle event: AVSystemRouteEvent,
                               completionHandler: @escaping @MainActor @Sendable (Bool) -> Void)
}

extension AVSystemRouteControllerObserver {
    public func systemRouteController(_ controller: AVSystemRouteController, handle event: AVSystemRouteEvent) async -> Bool {
        await withCheckedContinuation { continuation in
            systemRouteController(controller, handle: event) { continuation.resume(returning: $0) }
        }
    }

    public func systemRouteController(_ controller: AVSystemRouteController, handle event: AVSystemRouteEvent,
                                      completionHandler: @escaping @MainActor @Sendable (Bool) -> Void) {
        completionHandler(false)
    }
}
