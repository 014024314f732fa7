import Foundation
import MediaDevice
import MediaRouteIPC
import Synchronization

/// Devices that come back. A route whose device went away on its own (lost, dropped its
/// activation, its driver crashed) is not ended at once: it stays listed as reconnecting for the
/// reconnect window, its session parked (paused at its position, off the device), while its driver
/// discovers (no picker needed). When the driver finds the device again the route is activated
/// again under the same session id, its remembered volume restored, and it is active as before;
/// its session stays paused until someone resumes it (nothing starts playing by itself). A device
/// that asks for a pairing code again cannot come back by itself, and the window's end ends the
/// route for good. After a restart of the daemon, the saved routes come back the same way.
extension Supervisor {
    /// How long after a failed attempt a device that is listed is tried again.
    static let reconnectRetry: Duration = .seconds(2)

    /// A device went away on its own: its route waits for it within the reconnect window, else it
    /// ends as it always did. Returns what the driver must release (the route and child routes,
    /// each with whether it played).
    func deviceWentAway(_ route: ActiveRoute, message: String) -> [(ActiveRoute, Bool)] {
        guard configuration.reconnectWindow > .zero, !isShuttingDown, route.parent == nil, route.reconnect == nil, routes.isCurrent(route) else {
            return detach(route, reason: .oldDeviceUnavailable, message: message)
        }
        var ended: [(ActiveRoute, Bool)] = []
        for child in routes.children(of: route) { ended += detach(child, reason: .oldDeviceUnavailable, message: message) }
        endStreams(of: route, because: message)
        let wasPlaying = route.isPlaying
        if let state = route.parkSession() { publish(.playback(session: route.session.id, owner: route.mediaOwner, state: state)) }
        waitForReturn(route, why: message, until: Date() + TimeInterval(configuration.reconnectWindow.milliseconds) / 1000)
        ended.append((route, wasPlaying))
        return ended
    }

    /// Lists the route as reconnecting until `until`, and has its driver discover meanwhile.
    func waitForReturn(_ route: ActiveRoute, why: String, until: Date) {
        let session = route.session.id
        var wait = ReconnectWait(until: until, why: why)
        let remaining = Duration.milliseconds(max(0, Int64(until.timeIntervalSinceNow * 1000)))
        wait.deadline = loop.schedule(after: remaining) { [self] in
            assumeIsolated { $0.reconnectWindowEnded(session) }
        }
        route.reconnect = wait
        logger.notice("\(route.device.displayName) went away (\(why)); waiting for it to come back until \(wait.untilText)")
        events.remember("\(route.device.displayName) reconnecting until \(wait.untilText): \(why)")
        publish(.updated(route: route.description))
        let record = route.record
        Task { await self.discoverWhileWaiting(record) }
    }

    /// Whether a route of `record` waits for its device: its driver then discovers without a picker.
    func awaitsReturn(_ record: DriverRecord) -> Bool { routes.routes(of: record).contains { $0.reconnect != nil } }

    /// Starts the driver (unless its restart after a crash is already scheduled) and its discovery;
    /// a driver that cannot run ends the waits on it.
    private func discoverWhileWaiting(_ record: DriverRecord) async {
        guard awaitsReturn(record) else { return }
        switch record.phase {
        case .backingOff, .starting: return  // its start discovers, since a route waits
        case .failed(let why), .refused(let why): return endWaits(of: record, message: "driver \(record.id) cannot run (\(why))")
        case .stopped, .running: break
        }
        guard isEligible(record) else { return endWaits(of: record, message: "driver \(record.id) is disabled") }
        do { _ = try await ensureRunning(record) } catch { return endWaits(of: record, message: "\(error)") }
        await startDiscovery(record)
        for route in routes.routes(of: record) where route.reconnect != nil && record.devices[route.device.id] != nil { scheduleRetry(route) }
    }

    /// Ends the routes waiting on a driver that cannot run.
    func endWaits(of record: DriverRecord, message: String) {
        for route in routes.routes(of: record) where route.reconnect != nil {
            detach(route, reason: .oldDeviceUnavailable, message: "\(route.device.displayName) cannot come back: \(message)")
        }
    }

    /// The driver reported these devices: routes waiting for one of them try to come back.
    func devicesSeen(_ devices: [MediaOutputDevice], of record: DriverRecord) {
        for route in routes.routes(of: record) where route.reconnect != nil && devices.contains(where: { $0.id == route.device.id }) {
            Task { await self.attemptReturn(route) }
        }
    }

    private func scheduleRetry(_ route: ActiveRoute) {
        guard route.reconnect != nil, route.reconnect?.retry == nil else { return }
        let session = route.session.id
        route.reconnect?.retry = loop.schedule(after: Self.reconnectRetry) { [self] in
            assumeIsolated { supervisor in
                guard let route = supervisor.routes[session], route.reconnect != nil else { return }
                route.reconnect?.retry = nil
                Task { await supervisor.attemptReturn(route) }
            }
        }
    }

    /// Activates the device of a waiting route again, under the route's own session id, asking no
    /// one for a code: a device that wants one ends the wait with that reason.
    func attemptReturn(_ route: ActiveRoute) async {
        guard routes.isCurrent(route), let wait = route.reconnect, !wait.isAttempting, route.record.process != nil,
              let device = route.record.devices[route.device.id] else { return }
        route.reconnect?.isAttempting = true
        if let retry = wait.retry { loop.cancelTimer(retry) }
        route.reconnect?.retry = nil
        let record = route.record
        let askedForCode = Mutex(false)
        do {
            try await activateAtDriver(record, device, session: route.session) { _ in
                askedForCode.withLock { $0 = true }
                return nil
            }
        } catch {
            guard routes.isCurrent(route), route.reconnect != nil else { return }
            route.reconnect?.isAttempting = false
            if askedForCode.withLock({ $0 }) {
                detach(route, reason: .oldDeviceUnavailable,
                       message: "\(device.displayName) asks for a pairing code again, so it cannot come back by itself; activate it again")
                return
            }
            logger.notice("\(device.displayName) is listed again but did not activate yet: \(error)")
            return scheduleRetry(route)
        }
        let restored = routes.isCurrent(route) && route.reconnect != nil ? await restoreRememberedVolume(record, device) : nil
        guard routes.isCurrent(route), route.reconnect != nil else {
            tellDriver(record, ToDriver.Deactivate(device: device, session: route.session.id))
            return
        }
        stopWaiting(route)
        route.device = device
        if let restored { (route.volume, route.muted) = restored }
        record.cancelIdleTimer(loop)
        logger.info("\(device.displayName) came back: route \(route.session) is active again through \(record.id)")
        events.remember("\(device.displayName) came back")
        publish(.updated(route: route.description))
        await stopDiscoveryUnlessWanted(record)
    }

    /// The window ended without the device.
    private func reconnectWindowEnded(_ session: String) {
        guard let route = routes[session], let wait = route.reconnect else { return }
        route.reconnect?.deadline = nil
        detach(route, reason: .oldDeviceUnavailable, message: "\(route.device.displayName) did not come back by \(wait.untilText) (\(wait.why))")
    }

    /// Forgets a route's wait (it came back or ended); its driver stops discovering when nothing else wants it.
    func stopWaiting(_ route: ActiveRoute) {
        guard let wait = route.reconnect else { return }
        if let deadline = wait.deadline { loop.cancelTimer(deadline) }
        if let retry = wait.retry { loop.cancelTimer(retry) }
        route.reconnect = nil
        let record = route.record
        Task { await self.stopDiscoveryUnlessWanted(record) }
    }

    /// Stops a driver's discovery when no picker is open and no route waits on it, and lets it go idle.
    func stopDiscoveryUnlessWanted(_ record: DriverRecord) async {
        if record.isDiscovering, pickers.isEmpty, !awaitsReturn(record) {
            record.isDiscovering = false
            _ = try? await call(record, ToDriver.StopDiscovery())
        }
        scheduleIdleExit(record)
    }

    // MARK: Parked sessions

    /// A change to a parked session: a seek moves where it will resume; resuming starts it on the
    /// device again, at its position (the device may sound from the start for as long as the seek
    /// takes); anything else waits until it is resumed. While its device is away it cannot resume.
    func changeParkedSession(_ route: ActiveRoute, _ changes: PlaybackChanges) async throws -> RouteDescription {
        guard let parked = route.playback, let url = route.url else { return route.description }
        let name = route.device.displayName
        guard changes.isPlaying == true else {
            guard changes == PlaybackChanges(position: changes.position, isPlaying: changes.isPlaying) else {
                throw MediaDeviceError(.unsupported, "the session on \(name) waits paused at \(Int(parked.status.position)) s, off the device; only seeking and resuming apply until it is resumed")
            }
            if let position = changes.position {
                var moved = parked.status
                moved.position = position
                publish(.playback(session: route.session.id, owner: route.mediaOwner, state: route.store(playback: moved)))
            }
            return route.description
        }
        if let wait = route.reconnect {
            throw MediaDeviceError(.connectionFailed, "\(name) is away (\(wait.why)); the system waits for it until \(wait.untilText), and its session can be resumed when it is back")
        }
        let owner = route.mediaOwner, application = route.application
        route.endSession()
        do {
            _ = try await play(on: route, url: url, application: application, owner: owner)
        } catch {
            if let owner, route.playback == nil {
                publish(.sessionEnded(session: route.session.id, owner: owner, state: parked,
                                      error: MediaDeviceError(.sessionFailed, "it could not be resumed on \(name): \(error)")))
            }
            throw error
        }
        var rest = changes
        if rest.position == nil, parked.status.position > 0 { rest.position = parked.status.position }
        let state = try await call(route.record, ToDriver.SetPlayback(session: route.session.id, changes: rest))
        if route.playback != nil { publish(.playback(session: route.session.id, owner: route.mediaOwner, state: route.store(playback: state))) }
        return route.description
    }

    // MARK: After a restart

    /// The routes the previous daemon saved come back as routes waiting for their devices (the
    /// window counted from now, unless they were waiting already), owned by the operator (the
    /// connections that activated them are gone), their sessions parked at the saved positions.
    func bringBackSavedRoutes() {
        let (saved, problem) = savedRoutes.load()
        if let problem { logger.error("\(problem)") }
        guard configuration.reconnectWindow > .zero else {
            if !saved.isEmpty { try? savedRoutes.save([]) }
            return
        }
        let now = Date()
        for entry in saved {
            guard let record = fleet.record(entry.protocol), record.manifest.kind == .protocolDriver else {
                logger.error("\(entry.device.displayName) does not come back: no driver of \(entry.protocol) is installed")
                continue
            }
            let until = entry.reconnectingUntil.map { Date(timeIntervalSince1970: $0) } ?? now + TimeInterval(configuration.reconnectWindow.milliseconds) / 1000
            guard until > now else { continue }
            let route = ActiveRoute(session: MediaOutputSession(id: routes.makeSessionID()), record: record, device: entry.device, owner: nil,
                                    simultaneousSessions: entry.simultaneousSessions)
            if let session = entry.session { route.parkSession(url: session.url, application: session.application, state: session.state) }
            routes.add(route)
            waitForReturn(route, why: "mediarouted restarted", until: until)
        }
    }
}
