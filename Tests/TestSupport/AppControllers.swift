import AVSystemRouting
import Synchronization

/// The apps a test bed made against its supervisor's socket, invalidated together at tear-down.
public final class AppControllers: Sendable {
    private let socket: String
    private let made = Mutex<[AVSystemRouteController]>([])

    public init(socket: String) { self.socket = socket }

    /// A new app handling `protocols`.
    public func make(_ applicationIdentifier: String = "org.test.app", protocols: [String]) -> AVSystemRouteController {
        let controller = AVSystemRouteController(configuration: .init(applicationIdentifier: applicationIdentifier, supportedProtocols: protocols,
                                                                      socketPath: socket))
        made.withLock { $0.append(controller) }
        return controller
    }

    /// Every app made, oldest first.
    public var all: [AVSystemRouteController] { made.withLock { $0 } }

    public func invalidateAll() async {
        for controller in all { await controller.invalidate() }
    }
}
