import Foundation
import MediaDevice
import MediaRouteIPC
import MediaRouteWire
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
    /// What mediarouted sent that could not be read: reported, never dropped unseen.
    let problems = ProtocolProblems()

    private struct WeakObserver {
        weak var observer: (any AVSystemRouteControllerObserver)?
        init(_ observer: any AVSystemRouteControllerObserver) { self.observer = observer }
    }
    private struct State {
        var observers: [(id: ObjectIdentifier, box: WeakObserver)] = []
        var routes: [AVSystemRoute] = []
        var changeWatchers: [UUID: AsyncStream<AVSystemRouteChange>.Continuation] = [:]
        var tokenWatchers: [UUID: AsyncStream<String>.Continuation] = [:]
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

    /// Every active route as an output (a route reconnecting to its device is not one until it is back).
    public var currentRoute: AVSystemRouteDescription { AVSystemRouteDescription(outputs: activeRoutes.filter { $0.state == .active }.map(\.output)) }

    /// Every route change from now on (also posted as `routeChangeNotification`).
    public func routeChanges() -> AsyncStream<AVSystemRouteChange> {
        let (stream, continuation) = AsyncStream<AVSystemRouteChange>.makeStream()
        let id = UUID()
        state.withLock { $0.changeWatchers[id] = continuation }
        continuation.onTermination = { [weak self] _ in self?.state.withLock { _ = $0.changeWatchers.removeValue(forKey: id) } }
        return stream
    }

    // MARK: For NowPlaying, which shares the app's one connection (an application identifier takes one)

    /// One request to mediarouted, connecting first if the app has not: NowPlaying's remote
    /// sessions need no route observer.
    package func request<Request: WireRequest>(_ request: Request) async throws -> Request.Result {
        _ = daemon.connect()
        return try await daemon.call(request)
    }

    /// The app's push-to-start token each time the operator rotates it (hex).
    package func pushToStartTokenChanges() -> AsyncStream<String> {
        let (stream, continuation) = AsyncStream<String>.makeStream()
        let id = UUID()
        state.withLock { $0.tokenWatchers[id] = continuation }
        continuation.onTermination = { [weak self] _ in self?.state.withLock { _ = $0.tokenWatchers.removeValue(forKey: id) } }
        return stream
    }

    // MARK: What mediarouted says, in order

    private func handle(_ input: DaemonConnection.Inbound) async {
        switch input {
        case .connected:
            // Routes that were active before the app connected (or while it was away).
            do {
                for route in try await daemon.call(App.Routes()).routes { await activated(route) }
            } catch let error as AVSystemRoutingError where error.code == .unavailable {
                // The connection dropped again; its `.disconnected` follows.
            } catch {
                problems.report("the routes active before the app connected are unknown: \(error)")
            }
        case .disconnected(let reason):
            for stream in registry.allStreams {
                stream.end(AVSystemRoutingError(.unavailable, "the connection to mediarouted was lost (\(reason))"))
                registry.remove(stream)
            }
            for route in activeRoutes {
                await deactivated(route.identifier, reason: .oldDeviceUnavailable, message: "the connection to mediarouted was lost (\(reason))")
            }
        case .event(let event):
            await handle(event)
        }
    }

    private func handle(_ event: DaemonEvent) async {
        switch event {
        case .routeActivated(let message):
            await activated(message.route)
        case .routeDeactivated(let message):
            await deactivated(message.route.session, reason: AVSystemRouteChangeReason(rawValue: message.reason.rawValue) ?? .unknown, message: message.message)
        case .routeUpdated(let message):
            guard let route = activeRoutes.first(where: { $0.identifier == message.route.session }) else { return }
            let previous = currentRoute
            let change = route.update(message.route)
            if change.wentAway, case .reconnecting(let until) = route.state {
                await announce(AVSystemRouteChange(reason: .oldDeviceUnavailable, previousRoute: previous, currentRoute: currentRoute,
                                                   message: "\(route.routeDisplayName) went away; mediarouted waits for it to come back until \(until)"))
            } else if change.cameBack {
                await announce(AVSystemRouteChange(reason: .newDeviceAvailable, previousRoute: previous, currentRoute: currentRoute,
                                                   message: "\(route.routeDisplayName) is back"))
            } else if change.description {
                await announce(AVSystemRouteChange(reason: .routeConfigurationChange, previousRoute: previous, currentRoute: currentRoute,
                                                   message: "\(route.routeDisplayName) changed"))
            }
        case .sessionState(let message):
            guard let media = registry.session(message.session) else { return }
            await MainActor.run { media.playbackControl.report(message.state) }
        case .sessionEnded(let message):
            guard let media = registry.session(message.session) else { return }
            await media.end(final: message.state.status, error: AVSystemRoutingError(.sessionEnded, message.error.message))
        case .streamEnded(let message):
            guard let stream = registry.stream(message.stream) else { return }
            stream.end(AVSystemRoutingError(.sessionEnded, message.error.message))
            registry.remove(stream)
        case .dataReceived(let message):
            // Base64 is decoded here, at the app's edge; the daemon passed the text on as it came.
            let data = message.data.bytes
            if let session = message.session {
                guard let channel = registry.session(session)?.dataChannel else { return }
                await MainActor.run { channel.deliver(data) }
            } else if let route = activeRoutes.first(where: { $0.identifier == message.route }) {
                await MainActor.run { route.routeDataChannel.deliver(data) }
            }
        case .remoteCommand(let message):
            activeRoutes.first { $0.identifier == message.route }?.deliver(message.command)
        case .pushToStartToken(let message):
            for watcher in state.withLock({ Array($0.tokenWatchers.values) }) { watcher.yield(message.token) }
        case .undecodable(let error):
            problems.report("ignored a notification that does not decode: \(error.message)")
        }
    }

    private func activated(_ description: RouteDescription) async {
        let route = AVSystemRoute(description, daemon: daemon, registry: registry)
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
