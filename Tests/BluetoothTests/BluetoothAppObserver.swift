import AVSystemRouting
import Foundation

/// An app's observer, for these tests: the route it was given.
@MainActor
final class BluetoothAppObserver: AVSystemRouteControllerObserver {
    private(set) var route: AVSystemRoute?
    nonisolated init() {}

    func systemRouteController(_ controller: AVSystemRouteController, handle event: AVSystemRouteEvent) async -> Bool {
        if event.reason == .activate { route = event.route }
        return true
    }
}
