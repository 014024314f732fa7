import Foundation
import Logging
import MediaDevice
import MediaRouteIPC

/// Activation, pairing, sessions, playback, volume and data: the part of the lifecycle after the picker.
extension Supervisor {
    /// How long a driver may take to report an activation or session outcome.
    static let outcomeTimeout: Duration = .seconds(60)

    /// The largest data-channel message, in bytes (base64 on the wire stays far under the frame limit).
    public static let maximumDataMessage = 1 << 20

    /// Finds a picker entry by name (case- and space-insensitive) or a device by id. Without a
    /// protocol, the preferred one, or for an app (`permitted`) the first it declared.
    func resolve(_ device: String, protocolID: String?, permitted: ((String) -> Bool)? = nil) throws -> (DriverRecord, MediaOutputDevice) {
        let key = PickerEntry.key(device)
        let entry = pickerEntries().first { PickerEntry.key($0.name) == key }
            ?? pickerEntries().first { $0.routes.contains { $0.device.id == device } }
        guard let entry else {
            throw MediaDeviceError(.deviceNotFound, "no device \"\(device)\" is in the picker; run `mediaroute devices` to discover devices")
        }
        var wanted = protocolID ?? entry.preferredProtocol
        if let permitted, protocolID == nil, !permitted(wanted) {
            guard let usable = entry.routes.map(\.protocolID).first(where: permitted) else {
                throw MediaDeviceError(.unsupported, "\"\(entry.name)\" is reachable only through \(entry.routes.map(\.protocolID).joined(separator: ", ")), none of which this app declared")
            }
            wanted = usable
        }
        guard let route = entry.routes.first(where: { $0.protocolID == wanted || $0.device.id == device && protocolID == nil }) else {
            throw MediaDeviceError(.unsupported, "\"\(entry.name)\" is not reachable through \(wanted); it is through \(entry.routes.map(\.protocolID).joined(separator: ", "))")
        }
        return (try record(route.protocolID), route.device)
    }

    /// The active route to `device`: a session id, or a device name or id (its main route, not a child).
    func activeRoute(_ device: String) throws -> ActiveRoute {
        let key = PickerEntry.key(device)
        if let route = routes[device] ?? routes.values.first(where: { $0.parent == nil && (PickerEntry.key($0.device.displayName) == key || $0.device.id == device) }) {
            return route
        }
        throw MediaDeviceError(.deviceNotFound, "\"\(device)\" is not active; `mediaroute activate \"\(device)\"` first")
    }

    // MARK: Activation

    /// Activates a device, asking `pairing` for a code when the driver wants one (nil: cancelled).
    /// Returns the active route; activating an active device returns its route.
    public func activate(_ device: String, protocolID: String? = nil,
                         pairing: @escaping @Sendable (PairingRequest) async -> String?) async throws -> JSONValue {
        try await activate(device, protocolID: protocolID, app: nil, pairing: pairing)
    }

    /// For a client: an app may only reach the device through a protocol it declared, and the route
    /// it activates ends when it disconnects (the operator's stays).
    func activate(_ device: String, protocolID: String?, app: AppIdentity?,
                  pairing: @escaping @Sendable (PairingRequest) async -> String?) async throws -> JSONValue {
        let owner = app?.id
        let (record, target) = try resolve(device, protocolID: protocolID, permitted: app.map { app in { app.mayUse(protocol: $0) } })
        if let existing = routes.values.first(where: { $0.parent == nil && $0.record === record && $0.device.id == target.id }) { return existing.json }
        let process = try await ensureRunning(record)
        if !process.supportsSimultaneousSessions, let busy = routes.values.first(where: { $0.record === record }) {
            throw MediaDeviceError(.busy, "driver \(record.id) runs one session at a time and \(busy.device.displayName) is active; deactivate it first")
        }
        return try await openRoute(record, target, owner: owner, simultaneous: process.supportsSimultaneousSessions, parent: nil, pairing: pairing).json
    }

    /// One activation through the driver, with the pairing dialogue it asks for; the new route is
    /// registered and, unless it is a child route, announced to apps.
    private func openRoute(_ record: DriverRecord, _ target: MediaOutputDevice, owner: ClientID?, simultaneous: Bool, parent: String?,
                           pairing: @escaping @Sendable (PairingRequest) async -> String?) async throws -> ActiveRoute {
        let session = MediaOutputSession(id: makeSessionID())
        let mailbox = SessionMailbox(record: record)
        mailboxes[session.id] = mailbox
        defer { mailboxes[session.id] = nil }
        let timeout = loop.schedule(after: Self.outcomeTimeout) {
            mailbox.deliver(.aborted(MediaDeviceError(.timedOut, "driver \(record.id) reported no activation result for \(target.displayName) within \(Self.outcomeTimeout)")))
        }
        defer { loop.cancelTimer(timeout) }
        _ = try await call(record, DriverMethod.activate, ["device": target.json, "session": .string(session.id),
                                                           "features": .array(target.capabilities.names.map { .string($0) })])
        while true {
            switch await mailbox.next() {
            case .activated:
                // Whoever asked may have gone while the driver worked: nothing may be left in their name.
                let gone: String? = if let owner, !clients.contains(owner) {
                    "the client that asked to activate \(target.displayName) disconnected"
                } else if let parent, routes[parent] == nil {
                    "the route to \(target.displayName) ended while a session's own activation was opening"
                } else { nil }
                if let gone {
                    tellDriver(record, DriverMethod.deactivate, ["device": target.json, "session": .string(session.id)])
                    throw MediaDeviceError(.connectionFailed, gone)
                }
                let route = ActiveRoute(session: session, record: record, device: target, owner: owner, simultaneousSessions: simultaneous, parent: parent)
                routes[session.id] = route
                record.cancelIdleTimer(loop)
                logger.info("route active: \(target.displayName) through \(record.id) (\(session))\(parent.map { " beside \($0)" } ?? "")")
                if parent == nil { publish(.activated(route: route.json, protocolID: record.id)) }
                return route
            case .activationFailed(let error), .aborted(let error):
                throw error
            case .pairingRequested(let reason, let method):
                let request = PairingRequest(deviceName: target.displayName, protocolName: record.manifest.displayName, reason: reason, method: method)
                let code = await pairing(request)
                _ = try await call(record, DriverMethod.pair, ["device": target.json, "session": .string(session.id),
                                                               "code": code.map { .string($0) } ?? .null])
            case .started, .sessionFailed:
                continue
            }
        }
    }

    /// Ends a route on the operator's request.
    public func deactivate(_ device: String) async throws {
        let route = try activeRoute(device)
        await endRoute(route, reason: .override, message: "deactivated by the operator")
    }

    /// Ends a route (and the child routes beside it): apps are told at once, then the driver is asked
    /// to pause (when the device went away while playing) and to deactivate the device.
    func endRoute(_ route: ActiveRoute, reason: RouteChangeReason, message: String) async {
        let ended = detach(route, reason: reason, message: message)
        guard case .running = route.record.phase else { return }
        // In a task of its own: a request of a client that just disconnected is cancelled, and the
        // driver must hear of the end all the same.
        await Task { await self.finishAtDriver(ended, pausing: reason == .oldDeviceUnavailable, record: route.record) }.value
    }

    /// Tells the driver that routes ended (pausing what played on them, if asked) and lets it go idle.
    private func finishAtDriver(_ ended: [(ActiveRoute, Bool)], pausing: Bool, record: DriverRecord) async {
        for (gone, wasPlaying) in ended {
            if wasPlaying && pausing {
                _ = try? await call(gone.record, DriverMethod.setPlayback, ["session": .string(gone.session.id), "changes": ["isPlaying": false]])
            }
            _ = try? await call(gone.record, DriverMethod.deactivate, ["device": gone.device.json, "session": .string(gone.session.id)])
        }
        scheduleIdleExit(record)
    }

    /// An app's main route by its id, checked against the app; `closing` ends the sentence of the
    /// error for a route that is gone.
    func appRoute(_ identifier: String, app: AppIdentity, closing: String = "") throws -> ActiveRoute {
        guard let route = routes[identifier], route.parent == nil else {
            throw MediaDeviceError(.deviceNotFound, "route \(identifier) is not active (it may have been deactivated)\(closing)")
        }
        try app.check(route)
        return route
    }

    /// Tells a driver something whatever becomes of the request that led to it (it may be cancelled).
    func tellDriver(_ record: DriverRecord, _ method: String, _ params: JSONObject) {
        Task { _ = try? await self.call(record, method, params) }
    }

    /// Removes a route and its children from the supervisor's books and tells apps, without talking
    /// to the driver (it may be dead). Returns the routes removed and whether each was playing.
    @discardableResult
    func detach(_ route: ActiveRoute, reason: RouteChangeReason, message: String) -> [(ActiveRoute, Bool)] {
        guard routes[route.session.id] === route else { return [] }
        var removed: [(ActiveRoute, Bool)] = []
        for child in routes.values where child.parent == route.session.id {
            removed += detach(child, reason: reason, message: message)
        }
        routes[route.session.id] = nil
        endStreams(of: route, because: message)
        let wasPlaying = route.playback?["isPlaying"] == .bool(true)
        endMediaSession(on: route, error: MediaDeviceError(reason == .override ? .sessionFailed : .connectionFailed,
                                                           "the route to \(route.device.displayName) ended: \(message)"))
        if route.parent == nil {
            publish(.deactivated(route: route.json, protocolID: route.record.id, reason: reason, message: message))
            let level: Logger.Level = reason == .override || isShuttingDown ? .info : .error
            logger.log(level: level, "route inactive: \(route.device.displayName) (\(route.session)): \(message)")
            remember("\(route.device.displayName) deactivated: \(message)")
        }
        removed.append((route, wasPlaying))
        return removed
    }

    /// Ends every route of a driver that died or stopped, and fails whatever waited on it.
    func dropRoutes(of record: DriverRecord, reason: String) {
        for route in routes.values where route.record === record && route.parent == nil {
            detach(route, reason: isShuttingDown ? .override : .oldDeviceUnavailable, message: "driver \(record.id) \(reason)")
        }
        for mailbox in mailboxes.values where mailbox.record === record {
            mailbox.deliver(.aborted(MediaDeviceError(.driverFailed, "driver \(record.id) \(reason)")))
        }
    }

    /// The driver no longer sees these devices: their routes end, and what played on them pauses.
    func devicesLost(_ ids: Set<String>, of record: DriverRecord) {
        for route in routes.values where route.record === record && route.parent == nil && ids.contains(route.device.id) {
            let name = route.device.displayName
            // Detached now, so nothing new starts on it; the driver is told right after.
            let ended = detach(route, reason: .oldDeviceUnavailable, message: "\(name) is no longer reachable")
            Task { await self.finishAtDriver(ended, pausing: true, record: record) }
        }
    }

    /// A driver reported new properties for devices; active routes to them take the new description.
    func devicesChanged(_ devices: [MediaOutputDevice], of record: DriverRecord) {
        for device in devices {
            for route in routes.values where route.record === record && route.device.id == device.id && route.device != device {
                route.device = device
                if route.parent == nil { publish(.updated(route: route.json, protocolID: record.id)) }
            }
        }
    }

    func remember(_ event: String) {
        recentEvents.append(event)
        if recentEvents.count > 20 { recentEvents.removeFirst() }
    }

    // MARK: Sessions

    /// Starts playing `url` on an active route (the operator's `play`); returns the route with its first playback state.
    public func startSession(_ device: String, url: String, application: String? = nil) async throws -> JSONValue {
        try await play(on: try activeRoute(device), url: url, application: application, owner: nil).json
    }

    /// Starts an app's media session on one of its routes. A route already playing takes a second
    /// session only if its driver runs simultaneous sessions: the session then gets an activation of
    /// its own beside the route (a child route).
    func startSession(onRoute routeSession: String, url: String, application: String?, app: AppIdentity) async throws -> JSONValue {
        let route = try appRoute(routeSession, app: app)
        var target = route
        if route.hasSession {
            guard route.simultaneousSessions else {
                throw MediaDeviceError(.busy, "\(route.device.displayName) is already playing a session and driver \(route.record.id) runs one at a time")
            }
            target = try await openRoute(route.record, route.device, owner: app.id, simultaneous: true, parent: route.session.id) { _ in nil }
        }
        do {
            return try await play(on: target, url: url, application: application, owner: app.id).json
        } catch {
            if target !== route { await endRoute(target, reason: .override, message: "its session did not start") }
            throw error
        }
    }

    private func play(on route: ActiveRoute, url: String, application: String?, owner: ClientID?) async throws -> ActiveRoute {
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
        route.isStartingSession = true
        defer { route.isStartingSession = false }
        let mailbox = SessionMailbox(record: route.record)
        mailboxes[route.session.id] = mailbox
        defer { mailboxes[route.session.id] = nil }
        let timeout = loop.schedule(after: Self.outcomeTimeout) {
            mailbox.deliver(.aborted(MediaDeviceError(.timedOut, "driver \(route.record.id) did not start playback within \(Self.outcomeTimeout)")))
        }
        defer { loop.cancelTimer(timeout) }
        var params: JSONObject = ["session": .string(route.session.id), "url": .string(url)]
        if let application { params["application"] = .string(application) }
        do {
            return try await awaitStart(on: route, params: params, mailbox: mailbox, url: url, owner: owner)
        } catch {
            await settleFailedStart(on: route)
            guard replacing, let error = error as? MediaDeviceError else { throw error }
            throw MediaDeviceError(error.code, "\(error.message); what played on \(route.device.displayName) before was stopped")
        }
    }

    /// Asks the driver to start the session and waits for its outcome.
    private func awaitStart(on route: ActiveRoute, params: JSONObject, mailbox: SessionMailbox, url: String, owner: ClientID?) async throws -> ActiveRoute {
        _ = try await call(route.record, DriverMethod.startSession, params)
        while true {
            switch await mailbox.next() {
            case .started(let app, let state):
                guard routes[route.session.id] === route else {
                    throw MediaDeviceError(.connectionFailed, "the route to \(route.device.displayName) ended while the session was starting")
                }
                if let owner, !clients.contains(owner) {
                    tellDriver(route.record, DriverMethod.stopSession, ["session": .string(route.session.id)])
                    throw MediaDeviceError(.connectionFailed, "the app that started the session on \(route.device.displayName) disconnected")
                }
                route.application = app
                route.url = url
                route.store(playback: state)
                route.mediaOwner = owner
                if route.parent == nil { publish(.updated(route: route.json, protocolID: route.record.id)) }
                return route
            case .sessionFailed(let error), .aborted(let error), .activationFailed(let error):
                throw error
            case .activated, .pairingRequested:
                continue
            }
        }
    }

    /// A session that did not start may have left the device playing: what played before (the
    /// driver refused the replacement, the device kept the old media), or this one, started late
    /// (a timeout). The session is stopped on the device, so nothing plays there that the daemon
    /// does not report; if even the stop fails, the route ends, and the device with it.
    private func settleFailedStart(on route: ActiveRoute) async {
        guard routes[route.session.id] === route, case .running = route.record.phase else { return }
        guard await stopOrEnd(route, ending: "its session neither started nor stopped") == nil else { return }
        if route.parent == nil { publish(.updated(route: route.json, protocolID: route.record.id)) }
    }

    /// Asks the driver to stop the route's session. If it cannot confirm the stop, the device may
    /// play on: the route is ended (`ending` and the error say why), and the error is returned.
    private func stopOrEnd(_ route: ActiveRoute, ending: String) async -> (any Error)? {
        do {
            _ = try await call(route.record, DriverMethod.stopSession, ["session": .string(route.session.id)])
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
        if let owner { publish(.sessionEnded(session: route.session.id, owner: owner, state: state, error: error.json)) }
    }

    /// The route a session plays on, checked against the app asking (its own sessions only).
    func sessionRoute(_ session: String, app: AppIdentity?) throws -> ActiveRoute {
        guard let app else { return try activeRoute(session) }
        guard let route = routes[session], route.playback != nil, route.mediaOwner == app.id else {
            throw MediaDeviceError(.deviceNotFound, "session \(session) is not one of \(app.applicationIdentifier)'s playing sessions (it may have ended)")
        }
        return route
    }

    /// Sets playback properties (isPlaying, position, speed, volume, muted, ...) of the session on `device`.
    public func setPlayback(_ device: String, _ changes: JSONObject) async throws -> JSONValue {
        try await setPlayback(session: device, changes, app: nil)
    }

    func setPlayback(session: String, _ changes: JSONObject, app: AppIdentity?) async throws -> JSONValue {
        let route = try sessionRoute(session, app: app)
        guard route.playback != nil else { throw MediaDeviceError(.sessionFailed, "nothing is playing on \(route.device.displayName); `mediaroute play URL --to \"\(route.device.displayName)\"` first") }
        let state = try await call(route.record, DriverMethod.setPlayback, ["session": .string(route.session.id), "changes": .object(changes)])
        if route.playback != nil, let state = state.objectValue {
            let stored = route.store(playback: state)
            if let owner = route.mediaOwner { publish(.playback(session: route.session.id, owner: owner, state: stored)) }
        }
        return route.json
    }

    public func stopSession(_ device: String) async throws {
        try await stopSession(session: device, app: nil)
    }

    func stopSession(session: String, app: AppIdentity?) async throws {
        let route = try sessionRoute(session, app: app)
        guard route.playback != nil else { throw MediaDeviceError(.sessionFailed, "nothing is playing on \(route.device.displayName)") }
        if let error = await stopOrEnd(route, ending: "its session could not be stopped") {
            throw MediaDeviceError(.sessionFailed, "\(route.device.displayName) did not confirm the stop (\(error)); the route was ended so that nothing plays there")
        }
        if app == nil {
            endMediaSession(on: route, error: MediaDeviceError(.sessionFailed, "stopped by the operator"))
        } else {
            route.endSession()
        }
        if route.parent != nil {
            await endRoute(route, reason: .override, message: "its session stopped")
        } else {
            publish(.updated(route: route.json, protocolID: route.record.id))
        }
    }

    /// The driver reported that a session failed after it started (the device stopped, the media broke).
    func sessionFailedLater(_ session: String, _ error: MediaDeviceError) {
        guard let route = routes[session], route.playback != nil else { return }
        logger.error("session on \(route.device.displayName) (\(session)) failed: \(error.message)")
        route.markPlaybackFailed()
        endMediaSession(on: route, error: error)
        if route.parent == nil {
            publish(.updated(route: route.json, protocolID: route.record.id))
        } else {
            Task { await self.endRoute(route, reason: .override, message: "its session failed") }  // a session's own activation ends with it
        }
    }

    // MARK: Volume and data

    public enum VolumeAction: Sendable {
        case get, set(Double), change(Int), mute, unmute
    }

    /// Reads or changes the volume of an active device, checking the device's volume control.
    public func volume(_ device: String, _ action: VolumeAction) async throws -> JSONValue {
        let route = try activeRoute(device)
        let target: JSONObject = ["device": route.device.json]
        switch (action, route.device.volumeControl) {
        case (.set, .absolute), (.change, .relative), (.change, .absolute), (.get, _): break
        case (.mute, _), (.unmute, _):
            guard route.device.canMute else { throw MediaDeviceError(.unsupported, "\(route.device.displayName) cannot be muted") }
        case (.set, let control), (.change, let control):
            throw MediaDeviceError(.unsupported, "\(route.device.displayName) has \(control == .none ? "no volume control" : "only relative volume (use +N or -N)")")
        }
        switch action {
        case .get: break
        case .set(let level):
            guard (0...1).contains(level) else { throw MediaDeviceError(.unsupported, "volume \(level) is outside 0...1") }
            _ = try await call(route.record, DriverMethod.setVolume, target.merging(["volume": .double(level)]))
        case .change(let steps): _ = try await call(route.record, DriverMethod.changeVolume, target.merging(["by": .integer(Int64(steps))]))
        case .mute: _ = try await call(route.record, DriverMethod.mute, target)
        case .unmute: _ = try await call(route.record, DriverMethod.unmute, target)
        }
        let state = try await call(route.record, DriverMethod.getVolume, target)
        volumeChanged(route, volume: state.objectValue?["volume"]?.doubleValue, muted: state.objectValue?["muted"]?.boolValue)
        return route.json
    }

    func volumeChanged(_ route: ActiveRoute, volume: Double?, muted: Bool?) {
        guard route.volume != volume || route.muted != muted else { return }
        route.volume = volume
        route.muted = muted
        if route.parent == nil { publish(.updated(route: route.json, protocolID: route.record.id)) }
    }

    /// Sends `data` to the application `application` on the device of an active route
    /// (the driver's `receiveData(_:fromApplication:session:)`).
    public func sendData(_ data: [UInt8], toApplication application: String, device: String) async throws {
        try await forwardData(data, to: try activeRoute(device), application: application)
    }

    /// An app's data: on the route-level channel (`toRoute`) it is addressed from the app's own
    /// identifier; on a session's channel, to the application the session launched on the device.
    func sendData(_ data: [UInt8], toRoute routeSession: String?, orSession session: String?, app: AppIdentity) async throws {
        if let routeSession {
            let route = try appRoute(routeSession, app: app, closing: "; its data channel is closed")
            try await forwardData(data, to: route, application: app.applicationIdentifier)
        } else if let session {
            let route = try sessionRoute(session, app: app)
            guard let application = route.application else {
                throw MediaDeviceError(.unsupported, "session \(session) plays in the device's player (.player mode), which has no data channel")
            }
            try await forwardData(data, to: route, application: application)
        } else {
            throw MediaDeviceError(.deviceNotFound, "data needs a \"route\" or a \"session\" to go to")
        }
    }

    private func forwardData(_ data: [UInt8], to route: ActiveRoute, application: String) async throws {
        guard data.count <= Self.maximumDataMessage else {
            throw MediaDeviceError(.unsupported, "a data message of \(data.count) bytes is over the \(Self.maximumDataMessage)-byte limit; split it")
        }
        _ = try await call(route.record, DriverMethod.dataToDevice, ["session": .string(route.session.id), "application": .string(application),
                                                                      "data": .string(Base64.encode(data))])
    }

    /// Data a device's application sent: for the app whose session it belongs to, else for the
    /// route-level channel of the app the device named.
    func dataFromDevice(_ bytes: [UInt8], session: String, application: String, record: DriverRecord) throws(RPCError) {
        // A route that just ended is dropped quietly: the driver may not have heard of it yet.
        guard let route = routes[session] else { return }
        guard route.record === record else { throw .invalidParams("sent data for session \(session), which is another driver's route") }
        let sessionOwner = route.playback != nil && route.application == application ? route.mediaOwner : nil
        publish(.data(route: route.parent ?? route.session.id, session: route.session.id, protocolID: record.id, application: application,
                      sessionOwner: sessionOwner, bytes: bytes))
    }

    // MARK: Listing and clean-up

    public func activeRoutes() -> [JSONValue] { routes.values.sorted { $0.session.id < $1.session.id }.map(\.json) }

    /// The routes an app may see: of its protocols, children left out.
    func routes(for app: AppIdentity) -> [JSONValue] {
        routes.values.filter { $0.parent == nil && app.mayUse(protocol: $0.record.id) }.sorted { $0.session.id < $1.session.id }.map(\.json)
    }

    func clientConnected(_ client: ClientID) { clients.insert(client) }

    /// A connection went away: its streams stop, the routes it activated end, and so do the
    /// sessions it started.
    func clientLeft(_ owner: ClientID, name: String) async {
        clients.remove(owner)
        stopStreams(ownedBy: owner)
        for route in routes.values where route.owner == owner && route.parent == nil {
            await endRoute(route, reason: .override, message: "\(name), which activated it, disconnected")
        }
        for route in routes.values where route.mediaOwner == owner {
            route.endSession()
            if route.parent != nil {
                await endRoute(route, reason: .override, message: "\(name), whose session it carried, disconnected")
            } else {
                _ = try? await call(route.record, DriverMethod.stopSession, ["session": .string(route.session.id)])
                publish(.updated(route: route.json, protocolID: route.record.id))
            }
        }
    }
}

extension JSONObject {
    func merging(_ other: JSONObject) -> JSONObject {
        var result = self
        for member in other.members { result[member.key] = member.value }
        return result
    }
}
