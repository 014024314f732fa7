import Foundation
import MediaDevice
import MediaRouteWire
import Synchronization

/// A request to play a URL on a route: add it to the route, then `start()` it.
public final class AVSystemRouteSession: Sendable {
    public let url: URL
    public let mode: AVSystemRoute.LaunchMode
    /// In `.application` mode, the application the device launches; nil means the app's own identifier.
    public let applicationIdentifier: String?

    private struct State {
        weak var route: AVSystemRoute?
        var starting = false
        /// The last `start()` failed: the session holds no place on its route (it may be started again).
        var failed = false
        var media: AVSystemRouteMediaSession?
    }
    private let state = Mutex(State())

    public init(url: URL, mode: AVSystemRoute.LaunchMode, applicationIdentifier: String? = nil) {
        self.url = url
        self.mode = mode
        self.applicationIdentifier = applicationIdentifier
    }

    /// The route it was added to, while it is.
    public var route: AVSystemRoute? { state.withLock { $0.route } }
    /// The media session, once started.
    public var mediaSession: AVSystemRouteMediaSession? { state.withLock { $0.media } }

    /// Starts playback on the route: the device fetches and plays the URL (in its player, or in the
    /// app's counterpart application). Fails if the session was not added to an active route, or
    /// if the driver or device refuses (`MediaDeviceError`).
    public func start() async throws -> AVSystemRouteMediaSession {
        let route = try state.withLock { state throws(AVSystemRoutingError) -> AVSystemRoute in
            guard let route = state.route else {
                throw AVSystemRoutingError(.sessionNotAdded, "add the session to a route with addSession(_:) before starting it")
            }
            guard !state.starting, state.media == nil else {
                throw AVSystemRoutingError(.sessionAlreadyStarted, "this session was already started; create a new AVSystemRouteSession to play again")
            }
            state.starting = true
            state.failed = false
            return route
        }
        do {
            return try await start(on: route)
        } catch {
            state.withLock { $0.failed = true; $0.starting = false }
            throw error
        }
    }

    private func start(on route: AVSystemRoute) async throws -> AVSystemRouteMediaSession {
        guard route.isActive else {
            throw AVSystemRoutingError(.routeInactive, "the route to \(route.routeDisplayName) is no longer active")
        }
        let answer = try await route.daemon.call(App.StartSession(route: route.identifier, url: url.absoluteString,
                                                                  mode: mode == .application ? .application : .player, application: applicationIdentifier))
        // The answer is the route the session plays on: the route itself, or a child route beside it.
        let media = AVSystemRouteMediaSession(identifier: answer.session, route: route, application: answer.application, mode: mode,
                                              playback: answer.playback, daemon: route.daemon)
        route.registry.add(media)
        if answer.session == route.identifier { route.setBusy(true) }
        state.withLock { $0.media = media; $0.starting = false }
        return media
    }

    /// Stops playback on the device. Stopping a session that never started, or already ended, does nothing.
    public func stop() async throws {
        guard let media = mediaSession, !media.hasEnded else { return }
        do {
            try await media.route.daemon.call(App.StopSession(session: media.identifier))
        } catch let error as MediaDeviceError where error.code == .deviceNotFound {
            // It ended on the daemon's side already (its route went away): nothing left to stop.
        }
        await media.end(final: nil, error: AVSystemRoutingError(.sessionEnded, "the session was stopped"))
        if media.identifier == media.route.identifier { media.route.setBusy(false) }
    }

    /// Started and ended, or its start failed: it no longer occupies its route.
    var isFinished: Bool { state.withLock { $0.media.map(\.hasEnded) ?? $0.failed } }

    func claim(by route: AVSystemRoute) -> Bool {
        state.withLock { state in
            guard state.route == nil, state.media == nil, !state.starting else { return false }
            state.route = route
            return true
        }
    }

    func release(by route: AVSystemRoute) {
        state.withLock { if $0.route === route { $0.route = nil } }
    }
}
