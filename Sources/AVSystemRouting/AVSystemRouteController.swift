import Foundation
import MediaDevice
import MediaRouteIPC
import Synchronization

/// The app's view of remote routes: tells observers when a route of one of the app's protocols
/// becomes active or inactive, and publishes route changes with their reason.
///
/// Routes are activated by a person (a route picker, `mediaroute activate`); the app observes them
/// and starts sessions on them. Everything goes through mediarouted, never to a driver directly.
public final class AVSystemRouteController: Sendable {
    /// Who the app is and which protocols it handles. On Linux there is no Info.plist: what an
    /// Apple app declares as `MDESupportedProtocols` is declared here.
    public struct Configuration: Sendable {
        /// Names the app to mediarouted; a `.application` session launches the device's application of this identifier.
        public var applicationIdentifier: String
        /// The media sharing protocols (their `protocolType` identifiers) whose routes the app handles.
        public var supportedProtocols: [String]
        /// mediarouted's socket; nil for the default (`$MEDIAROUTE_SOCKET`, then `$XDG_RUNTIME_DIR/mediaroute/mediarouted.sock`).
        public var socketPath: String?

        public init(applicationIdentifier: String, supportedProtocols: [String], socketPath: String? = nil) {
            self.applicationIdentifier = applicationIdentifier
            self.supportedProtocols = supportedProtocols
            self.socketPath = socketPath
        }

        /// The program's name, and the protocols listed in `$MDE_SUPPORTED_PROTOCOLS` (commas or spaces).
        public static var fromEnvironment: Configuration {
            let environment = ProcessInfo.processInfo.environment
            let protocols = (environment["MDE_SUPPORTED_PROTOCOLS"] ?? "").split { $0 == "," || $0 == " " }.map(String.init)
            return Configuration(applicationIdentifier: ProcessInfo.processInfo.processName, supportedProtocols: protocols)
        }
    }

    private static let sharedConfiguration = Mutex<Configuration?>(nil)

    /// Declares the app's identity and protocols for `shared`; call it before the first use of `shared`.
    public static func configure(_ configuration: Configuration) {
        sharedConfiguration.withLock { $0 = configuration }
    }

    /// The app's controller, configured by `configure(_:)` or else from the environment.
    public static let shared = AVSystemRouteController(configuration: sharedConfiguration.withLock { $0 } ?? .fromEnvironment)

    public let configuration: Configuration
    let daemon: DaemonConnection
    let registry = MediaSessionRegistry()

    private final class WeakObserver: @unchecked Sendable {
        weak var observer: (any AVSystemRouteControllerObserver)?
        init(_ observer: any AVSystemRouteControllerObserver) { self.observer = observer }
    }
    private struct State {
        var observers: [(id: ObjectIdentifier, box: WeakObserver)] = []
        var routes: [AVSystemRoute] = []
        var changeWatchers: [UUID: AsyncStream<AVSystemRouteChange>.Continuation] = [:]
    }
    private let state = Mutex(State())

    /// A controller of its own, for a program that speaks for several apps (and for tests); most
    /// apps use `shared`. It lives until `invalidate()`.
    public init(configuration: Configuration) {
        self.configuration = configuration
        daemon = DaemonConnection(socketPath: configuration.socketPath ?? SocketLocation.defaultPath,
                                  applicationIdentifier: configuration.applicationIdentifier, supportedProtocols: configuration.supportedProtocols)
        // The pump keeps the controller alive for as long as it is connected (or trying to be):
        // routes and sessions handed to the app depend on it for their events.
        let inbound = daemon.inbound
        Task {
            for await input in inbound { await self.handle(input) }
        }
    }

    /// Disconnects from mediarouted for good: every route ends (`.deactivate`, with the sessions
    /// on it) and the controller stops. For programs that make controllers of their own; `shared` lives forever.
    public func invalidate() async {
        await daemon.close()
    }

    // MARK: Observers

    /// Registers an observer (held weakly) for route events. False if it is registered already,
    /// or if the controller is unavailable because mediarouted is not running.
    public func addObserver(_ observer: any AVSystemRouteControllerObserver) -> Bool {
        let id = ObjectIdentifier(observer)
        let known = state.withLock { state in state.observers.contains { $0.id == id && $0.box.observer != nil } }
        guard !known, daemon.connect() else { return false }
        state.withLock { state in
            state.observers.removeAll { $0.id == id || $0.box.observer == nil }
            state.observers.append((id, WeakObserver(observer)))
        }
        return true
    }

    public func removeObserver(_ observer: any AVSystemRouteControllerObserver) {
        let id = ObjectIdentifier(observer)
        let none = state.withLock { state in
            state.observers.removeAll { $0.id == id || $0.box.observer == nil }
            return state.observers.isEmpty
        }
        if none { daemon.release() }
    }

    // MARK: Routes and changes

    /// The active routes of the app's protocols, in the order they became active.
    public var activeRoutes: [AVSystemRoute] { state.withLock { $0.routes } }

    /// Every active route as an output.
    public var currentRoute: AVSystemRouteDescription { AVSystemRouteDescription(outputs: activeRoutes.map(\.output)) }

    /// Every route change from now on (also posted as `routeChangeNotification`).
    public func routeChanges() -> AsyncStream<AVSystemRouteChange> {
        let (stream, continuation) = AsyncStream<AVSystemRouteChange>.makeStream()
        let id = UUID()
        state.withLock { $0.changeWatchers[id] = continuation }
        continuation.onTermination = { [weak self] _ in self?.state.withLock { _ = $0.changeWatchers.removeValue(forKey: id) } }
        return stream
    }

    // MARK: What mediarouted says, in order

    private func handle(_ input: DaemonConnection.Inbound) async {
        switch input {
        case .connected:
            // Routes that were active before the app connected (or while it was away).
            let list = (try? await daemon.call("app.routes", [:]).objectValue?["routes"]?.arrayValue) ?? []
            for route in list { await activated(route) }
        case .disconnected(let reason):
            for stream in registry.allStreams {
                stream.end(AVSystemRoutingError(.unavailable, "the connection to mediarouted was lost (\(reason))"))
                registry.remove(stream)
            }
            for route in activeRoutes {
                await deactivated(route.identifier, reason: .oldDeviceUnavailable, message: "the connection to mediarouted was lost (\(reason))")
            }
        case .notification(let method, let params):
            await handle(method, params)
        }
    }

    private func handle(_ method: String, _ params: JSONObject) async {
        switch method {
        case "route.activated":
            if let route = params["route"] { await activated(route) }
        case "route.deactivated":
            guard let id = params["route"]?.objectValue?["session"]?.stringValue else { return }
            let reason = params["reason"]?.stringValue.flatMap(AVSystemRouteChangeReason.init(rawValue:)) ?? .unknown
            await deactivated(id, reason: reason, message: params["message"]?.stringValue ?? "the route ended")
        case "route.updated":
            guard let json = params["route"], let id = json.objectValue?["session"]?.stringValue,
                  let route = activeRoutes.first(where: { $0.identifier == id }) else { return }
            let previous = currentRoute
            if route.update(json: json) {
                await announce(AVSystemRouteChange(reason: .routeConfigurationChange, previousRoute: previous, currentRoute: currentRoute,
                                                   message: "\(route.routeDisplayName) changed"))
            }
        case "session.state":
            guard let id = params["session"]?.stringValue, let media = registry.session(id), let state = params["state"]?.objectValue else { return }
            await MainActor.run { media.playbackControl.report(state) }
        case "session.ended":
            guard let id = params["session"]?.stringValue, let media = registry.session(id) else { return }
            let reason = MediaDeviceError(json: params["error"])?.message ?? "the session ended"
            await media.end(final: params["state"]?.objectValue.map(PlaybackStatus.init(json:)), error: AVSystemRoutingError(.sessionEnded, reason))
        case "stream.ended":
            guard let id = params["stream"]?.stringValue, let stream = registry.stream(id) else { return }
            stream.end(AVSystemRoutingError(.sessionEnded, MediaDeviceError(json: params["error"])?.message ?? "the stream ended"))
            registry.remove(stream)
        case "data.received":
            guard let text = params["data"]?.stringValue, let data = Data(base64Encoded: text) else { return }
            if let session = params["session"]?.stringValue {
                guard let channel = registry.session(session)?.dataChannel else { return }
                await MainActor.run { channel.deliver(data) }
            } else if let id = params["route"]?.stringValue, let route = activeRoutes.first(where: { $0.identifier == id }) {
                await MainActor.run { route.routeDataChannel.deliver(data) }
            }
        default:
            break
        }
    }

    private func activated(_ json: JSONValue) async {
        guard let route = AVSystemRoute(json: json, daemon: daemon, registry: registry) else { return }
        let previous = currentRoute
        let added = state.withLock { state -> Bool in
            guard !state.routes.contains(where: { $0.identifier == route.identifier }) else { return false }
            state.routes.append(route)
            return true
        }
        guard added else { return }
        await notifyObservers(AVSystemRouteEvent(reason: .activate, route: route))
        await announce(AVSystemRouteChange(reason: .newDeviceAvailable, previousRoute: previous, currentRoute: currentRoute,
                                           message: "\(route.routeDisplayName) is active through \(route.protocolName)"))
    }

    private func deactivated(_ id: String, reason: AVSystemRouteChangeReason, message: String) async {
        let previous = currentRoute
        let removed = state.withLock { state -> AVSystemRoute? in
            guard let index = state.routes.firstIndex(where: { $0.identifier == id }) else { return nil }
            return state.routes.remove(at: index)
        }
        guard let route = removed else { return }
        await route.invalidate(AVSystemRoutingError(.routeInactive, "the route to \(route.routeDisplayName) ended: \(message)"))
        await notifyObservers(AVSystemRouteEvent(reason: .deactivate, route: route))
        await announce(AVSystemRouteChange(reason: reason, previousRoute: previous, currentRoute: currentRoute, message: message))
    }

    private func notifyObservers(_ event: AVSystemRouteEvent) async {
        let observers = state.withLock { $0.observers.compactMap { $0.box.observer } }
        for observer in observers {
            _ = await observer.systemRouteController(self, handle: event)
        }
    }

    private func announce(_ change: AVSystemRouteChange) async {
        for watcher in state.withLock({ Array($0.changeWatchers.values) }) { watcher.yield(change) }
        await MainActor.run {
            NotificationCenter.default.post(name: Self.routeChangeNotification, object: self, userInfo: [
                Self.routeChangeReasonKey: change.reason.rawValue, Self.routeChangePreviousRouteKey: change.previousRoute,
            ])
        }
    }
}
