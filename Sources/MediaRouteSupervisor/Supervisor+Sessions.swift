import Foundation
import MediaDevice
import MediaRouteIPC

/// Media sessions on routes: start (replacing, or beside in a child route), playback changes,
/// stop, and failures, with one truth about what plays: a session that does not start is stopped
/// on the device, and a stop the driver cannot confirm ends the route.
extension Supervisor {
    /// Starts playing `url` on an active route (the operator's `play`); returns the route with its first playback state.
    package func startSession(_ device: String, url: String, application: String? = nil) async throws -> RouteDescription {
        try await startSession(on: device, url: url, application: application, by: .operator)
    }

    /// Starts a session. The operator names any route and replaces what plays there. An app names
    /// one of its routes; a route already playing takes its second session only if the driver runs
    /// simultaneous sessions, in an activation of its own beside the route (a child route).
    func startSession(on target: String, url: String, application: String?, by requester: Requester) async throws -> RouteDescription {
        let route = try routes.route(target, for: requester)
        try route.requireDevice()
        guard let app = requester.app, route.hasSession else {
            return try await play(on: route, url: url, application: application, owner: requester.client).description
        }
        guard route.simultaneousSessions else {
            throw MediaDeviceError(.busy, "\(route.device.displayName) is already playing a session and driver \(route.record.id) runs one at a time")
        }
        let child = try await openRoute(route.record, route.device, owner: app.id, simultaneous: true, parent: route.session.id) { _ in nil }
        do {
            return try await play(on: child, url: url, application: application, owner: app.id).description
        } catch {
            await endRoute(child, reason: .override, message: "its session did not start")
            throw error
        }
    }

    func play(on route: ActiveRoute, url: String, application: String?, owner: ClientID?) async throws -> ActiveRoute {
        guard let parsed = URL(string: url), let scheme = parsed.scheme, ["http", "https", "file", "rtsp"].contains(scheme.lowercased()) else {
            throw MediaDeviceError(.sessionFailed, "\"\(url)\" is not a URL a device can play (http, https, rtsp or file)")
        }
        guard route.device.capabilities.contains(.urlPlayback) else {
            throw MediaDeviceError(.unsupported, "\(route.device.displayName) cannot play URLs (its capabilities: \(route.device.capabilities.names.joined(separator: ", ")))")
        }
        guard !route.isStartingSession else {
            throw MediaDeviceError(.busy, "a session is starting on \(route.device.displayName); try again when it has")
        }
        // The operator may replace what plays; the app whose session that was is told it ended.
        let replacing = route.playback != nil
        endMediaSession(on: route, error: MediaDeviceError(.sessionFailed, "another session replaced it on \(route.device.displayName)"))
        route.sessionStart = SessionStart(url: url, owner: owner)
        defer { route.sessionStart = nil }
        let mailbox = SessionMailbox(protocolID: route.record.id)
        routes.mailboxes[route.session.id] = mailbox
        defer { routes.mailboxes[route.session.id] = nil }
        let record = route.record
        let timeout = loop.schedule(after: Self.outcomeTimeout) {
            mailbox.deliver(.aborted(MediaDeviceError(.timedOut, "driver \(record.id) did not start playback within \(Self.outcomeTimeout)")))
        }
        defer { loop.cancelTimer(timeout) }
        do {
            try await call(route.record, ToDriver.StartSession(session: route.session.id, url: url, application: application))
            return try await awaitStart(on: route, mailbox: mailbox, url: url, owner: owner)
        } catch {
            // A `session.started` read from now on is not taken in; one taken in already (the
            // driver reported before its answer failed) is undone.
            mailbox.settle()
            if route.sessionStart?.takenIn == true {
                endMediaSession(on: route, error: MediaDeviceError(.sessionFailed, "its start failed: \(error)"))
            }
            await settleFailedStart(on: route)
            guard replacing, let error = error as? MediaDeviceError else { throw error }
            throw MediaDeviceError(error.code, "\(error.message); what played on \(route.device.displayName) before was stopped")
        }
    }

    /// Waits for the driver's outcome of a session start.
    private func awaitStart(on route: ActiveRoute, mailbox: SessionMailbox, url: String, owner: ClientID?) async throws -> ActiveRoute {
        while true {
            switch await mailbox.next() {
            case .takenIn(nil):
                guard routes.isCurrent(route) else {
                    throw MediaDeviceError(.connectionFailed, "the route to \(route.device.displayName) ended as the session started")
                }
                return route
            case .started(let app, let state):
                // Not taken in as it was read (`sessionStarted`): the route had gone.
                try takeIn(route, application: app, state: state, url: url, owner: owner)
                return route
            case .takenIn(let error?), .sessionFailed(let error), .aborted(let error), .activationFailed(let error):
                throw error
            case .activated, .pairingRequested:
                continue
            }
        }
    }

    /// A driver's `session.started`, taken in as it is read: apps hear of the session and its
    /// state at once, not once the waiting start next runs (a turn of the loop later, which the
    /// media starting on the machine beside us stretched to 30-220 µs). The start is then told
    /// how it went. A route gone meanwhile leaves that to the start.
    func sessionStarted(_ report: FromDriver.SessionStarted, by record: DriverRecord) {
        guard let mailbox = routes.mailboxes[report.session], mailbox.protocolID == record.id else { return }
        guard let route = routes[report.session], route.record === record, let start = route.sessionStart, !start.takenIn, !mailbox.isSettled else {
            return mailbox.deliver(.started(application: report.application, state: report.state))
        }
        do throws(MediaDeviceError) {
            try takeIn(route, application: report.application, state: report.state, url: start.url, owner: start.owner)
            mailbox.deliver(.takenIn(nil))
        } catch {
            mailbox.deliver(.takenIn(error))
        }
    }

    /// The route now plays `url` for `owner` (an app, or nobody: the operator), and apps hear of it.
    private func takeIn(_ route: ActiveRoute, application: String?, state: PlaybackStatus, url: String, owner: ClientID?) throws(MediaDeviceError) {
        guard routes.isCurrent(route) else {
            throw MediaDeviceError(.connectionFailed, "the route to \(route.device.displayName) ended while the session was starting")
        }
        if let owner, !routes.clients.contains(owner) {
            tellDriver(route.record, ToDriver.StopSession(session: route.session.id))
            throw MediaDeviceError(.connectionFailed, "the app that started the session on \(route.device.displayName) disconnected")
        }
        route.sessionStart?.takenIn = true
        route.application = application
        route.url = url
        route.store(playback: state)
        route.mediaOwner = owner
        announceUpdate(route)
    }

    /// A session that did not start may have left the device playing: what played before (the
    /// driver refused the replacement, the device kept the old media), or this one, started late
    /// (a timeout). The session is stopped on the device, so nothing plays there that the daemon
    /// does not report; if even the stop fails, the route ends, and the device with it.
    private func settleFailedStart(on route: ActiveRoute) async {
        guard routes.isCurrent(route), route.record.process != nil else { return }
        guard await stopOrEnd(route, ending: "its session neither started nor stopped") == nil else { return }
        announceUpdate(route)
    }

    /// Asks the driver to stop the route's session. If it cannot confirm the stop, the device may
    /// play on: the route is ended (`ending` and the error say why), and the error is returned.
    private func stopOrEnd(_ route: ActiveRoute, ending: String) async -> (any Error)? {
        do {
            try await call(route.record, ToDriver.StopSession(session: route.session.id))
            return nil
        } catch {
            await endRoute(route, reason: .override, message: "\(ending) (\(error))")
            return error
        }
    }

    /// Forgets the session on a route and, if an app started it, tells that app it ended.
    func endMediaSession(on route: ActiveRoute, error: MediaDeviceError) {
        let owner = route.mediaOwner
        guard let state = route.endSession() else { return }
        if let owner { publish(.sessionEnded(session: route.session.id, owner: owner, state: state, error: error)) }
    }

    /// Sets playback properties (isPlaying, position, speed, volume, muted, ...) of the session on `device`.
    package func setPlayback(_ device: String, _ changes: PlaybackChanges) async throws -> RouteDescription {
        try await setPlayback(session: device, changes, by: .operator)
    }

    func setPlayback(session: String, _ changes: PlaybackChanges, by requester: Requester) async throws -> RouteDescription {
        let route = try routes.session(session, for: requester)
        guard route.playback != nil else { throw MediaDeviceError(.sessionFailed, "nothing is playing on \(route.device.displayName); `mediaroute play URL --to \"\(route.device.displayName)\"` first") }
        if route.isSessionParked { return try await changeParkedSession(route, changes) }
        let state = try await call(route.record, ToDriver.SetPlayback(session: route.session.id, changes: changes))
        if route.playback != nil {
            let stored = route.store(playback: state)
            publish(.playback(session: route.session.id, owner: route.mediaOwner, state: stored))
        }
        return route.description
    }

    public func stopSession(_ device: String) async throws {
        try await stopSession(session: device, by: .operator)
    }

    func stopSession(session: String, by requester: Requester) async throws {
        let route = try routes.session(session, for: requester)
        guard route.playback != nil else { throw MediaDeviceError(.sessionFailed, "nothing is playing on \(route.device.displayName)") }
        if !route.isSessionParked, let error = await stopOrEnd(route, ending: "its session could not be stopped") {
            throw MediaDeviceError(.sessionFailed, "\(route.device.displayName) did not confirm the stop (\(error)); the route was ended so that nothing plays there")
        }
        if requester.app == nil {
            endMediaSession(on: route, error: MediaDeviceError(.sessionFailed, "stopped by the operator"))
        } else {
            route.endSession()
        }
        if route.parent != nil {
            await endRoute(route, reason: .override, message: "its session stopped")
        } else {
            announceUpdate(route)
        }
    }

    /// The driver reported that a session failed after it started (the device stopped, the media broke).
    func sessionFailedLater(_ session: String, _ error: MediaDeviceError) {
        guard let route = routes[session], route.playback != nil, !route.isSessionParked else { return }
        logger.error("session on \(route.device.displayName) (\(session)) failed: \(error.message)", metadata: route.logMetadata)
        route.markPlaybackFailed()
        endMediaSession(on: route, error: error)
        if route.parent == nil {
            announceUpdate(route)
        } else {
            Task { await self.endRoute(route, reason: .override, message: "its session failed") }  // a session's own activation ends with it
        }
    }
}
