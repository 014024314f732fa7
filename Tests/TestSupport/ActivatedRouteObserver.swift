import AVSystemRouting
import Foundation

/// An app's observer, for tests of real drivers: keeps the route the app was given when a
/// device was activated for it.
@MainActor
public final class ActivatedRouteObserver: AVSystemRouteControllerObserver {
    public private(set) var route: AVSystemRoute?
    public nonisolated init() {}

    public func systemRouteController(_ controller: AVSystemRouteController, handle event: AVSystemRouteEvent) async -> Bool {
        if event.reason == .activate { route = event.route }
        return true
    }
}
