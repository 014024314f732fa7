import Logging
import MediaDevice
import MediaRouteIPC

/// Activation and its end: resolving a device through the picker, the pairing dialogue, routes
/// registered and announced, and routes ended by anyone (operator, app, device, driver).
extension Supervisor {
    /// Finds a picker entry by name (case- and space-insensitive) or a device by id. Without a
    /// protocol, the preferred one, or for an app the first it declared.
    func resolve(_ device: String, protocolID: String?, for requester: Requester) throws -> (DriverRecord, MediaOutputDevice) {
        let key = PickerEntry.key(device)
        let entries = pickerEntries()
        guard let entry = entries.first(where: { PickerEntry.key($0.name) == key }) ?? entries.first(where: { $0.routes.contains { $0.device.id == device } }) else {
            throw MediaDeviceError(.deviceNotFound, "no device \"\(device)\" was found within \(configuration.discoveryOnDemand) of discovery; run `mediaroute devices` to see what is there")
        }
        var wanted = protocolID ?? entry.preferredProtocol
        if let app = requester.app, protocolID == nil, !app.mayUse(protocol: wanted) {
            guard let usable = entry.routes.map(\.protocolID).first(where: app.mayUse(protocol:)) else {
                throw MediaDeviceError(.unsupported, "\"\(entry.name)\" is reachable only through \(entry.routes.map(\.protocolID).joined(separator: ", ")), none of which this app declared")
            }
            wanted = usable
        }
        guard let route = entry.routes.first(where: { $0.protocolID == wanted || $0.device.id == device && protocolID == nil }) else {
            throw MediaDeviceError(.unsupported, "\"\(entry.name)\" is not reachable through \(wanted); it is through \(entry.routes.map(\.protocolID).joined(separator: ", "))")
        }
        return (try fleet.require(route.protocolID), route.device)
    }

    /// Activates a device, asking `pairing` for a code when the driver wants one (nil: cancelled),
    /// discovering it first if nobody has yet. Activating an active device returns its route. An
    /// app reaches a device only through a protocol it declared, and its routes end when it
    /// disconnects (the operator's stay).
    package func activate(_ device: String, protocolID: String? = nil,
                         pairing: @escaping @Sendable (PairingRequest) async -> String?) async throws -> RouteDescription {
        try await activate(device, protocolID: protocolID, by: .operator, pairing: pairing)
    }

    func activate(_ device: String, protocolID: String?, by requester: Requester,
                  pairing: @escaping @Sendable (PairingRequest) async -> String?) async throws -> RouteDescription {
        if let app = requester.app, let protocolID, !app.mayUse(protocol: protocolID) {
            throw MediaDeviceError(.unsupported, "\(app.applicationIdentifier) did not declare \(protocolID) among its supported protocols")
        }
        _ = await discover(device)
        let (record, target) = try resolve(device, protocolID: protocolID, for: requester)
        if let existing = routes.mainRoute(to: target.id, of: record) { return existing.description }
        let process = try await ensureRunning(record)
        if !process.supportsSimultaneousSessions, let busy = routes.routes(of: record).first {
            throw MediaDeviceError(.busy, "driver \(record.id) runs one session at a time and \(busy.device.displayName) is active; deactivate it first")
        }
        return try await openRoute(record, target, owner: requester.client, simultaneous: process.supportsSimultaneousSessions, parent: nil,
                                   pairing: pairing).description
    }

    /// One activation through the driver, with the pairing dialogue it asks for; the new route is
    /// registered and, unless it is a child route, announced to apps, with the device's remembered
    /// volume restored first.
    func openRoute(_ record: DriverRecord, _ target: MediaOutputDevice, owner: ClientID?, simultaneous: Bool, parent: String?,
                   pairing: @escaping @Sendable (PairingRequest) async -> String?) async throws -> ActiveRoute {
        let session = MediaOutputSession(id: routes.makeSessionID())
        try await activateAtDriver(record, target, session: session, pairing: pairing)
        let process = record.process
        let restored = parent == nil ? await restoreRememberedVolume(record, target) : nil
        // Whoever asked may have gone while the driver worked: nothing may be left in their name.
        let gone: String? = if let owner, !routes.clients.contains(owner) {
            "the client that asked to activate \(target.displayName) disconnected"
        } else if let parent, routes[parent] == nil {
            "the route to \(target.displayName) ended while a session's own activation was opening"
        } else if process == nil || record.process !== process {
            "driver \(record.id) ended while \(target.displayName) was being activated"
        } else { nil }
        if let gone {
            tellDriver(record, ToDriver.Deactivate(device: target, session: session.id))
            throw MediaDeviceError(.connectionFailed, gone)
        }
        let route = ActiveRoute(session: session, record: record, device: target, owner: owner, simultaneousSessions: simultaneous, parent: parent)
        if let restored { (route.volume, route.muted) = restored }
        routes.add(route)
        record.cancelIdleTimer(loop)
        logger.info("route active: \(target.displayName) through \(record.id) (\(session))\(parent.map { " beside \($0)" } ?? "")", metadata: route.logMetadata)
        if parent == nil { publish(.activated(route: route.description)) }
        return route
    }

    /// Asks the driver to activate `target` under `session`, answering its pairing requests with
    /// `pairing`; returns when the driver reports the device active.
    func activateAtDriver(_ record: DriverRecord, _ target: MediaOutputDevice, session: MediaOutputSession,
                          pairing: @escaping @Sendable (PairingRequest) async -> String?) async throws {
        let mailbox = SessionMailbox(protocolID: record.id)
        routes.mailboxes[session.id] = mailbox
        defer { routes.mailboxes[session.id] = nil }
        let timeout = loop.schedule(after: Self.outcomeTimeout) {
            mailbox.deliver(.aborted(MediaDeviceError(.timedOut, "driver \(record.id) reported no activation result for \(target.displayName) within \(Self.outcomeTimeout)")))
        }
        defer { loop.cancelTimer(timeout) }
        try await call(record, ToDriver.Activate(device: target, session: session.id, features: target.capabilities))
        while true {
            switch await mailbox.next() {
            case .activated:
                return
            case .activationFailed(let error), .aborted(let error):
                throw error
            case .pairingRequested(let reason, let method):
                let request = PairingRequest(deviceName: target.displayName, protocolName: record.manifest.displayName,
                                             reason: reason, method: method)
                let code = await pairing(request)
                try await call(record, ToDriver.Pair(device: target, session: session.id, code: code))
            case .started, .takenIn, .sessionFailed:
                continue
            }
        }
    }

    /// Ends a route on request (the operator's `deactivate`).
    public func deactivate(_ device: String) async throws {
        await endRoute(try routes.named(device), reason: .override, message: "deactivated by the operator")
    }

    /// Ends a route (and the child routes beside it): apps are told at once, then the driver is asked
    /// to pause (when the device went away while playing) and to deactivate the device.
    func endRoute(_ route: ActiveRoute, reason: RouteChangeReason, message: String) async {
        // A route waiting for its device holds no activation at the driver.
        let atDriver = route.reconnect == nil
        let ended = detach(route, reason: reason, message: message)
        guard route.record.process != nil, atDriver else { return }
        // In a task of its own: a request of a client that just disconnected is cancelled, and the
        // driver must hear of the end all the same.
        await Task { await self.finishAtDriver(ended, pausing: reason == .oldDeviceUnavailable, record: route.record) }.value
    }

    /// Tells the driver that routes ended (pausing what played on them, if asked) and lets it go idle.
    func finishAtDriver(_ ended: [(ActiveRoute, Bool)], pausing: Bool, record: DriverRecord) async {
        for (gone, wasPlaying) in ended {
            if wasPlaying && pausing {
                _ = try? await call(gone.record, ToDriver.SetPlayback(session: gone.session.id, changes: PlaybackChanges(isPlaying: false)))
            }
            _ = try? await call(gone.record, ToDriver.Deactivate(device: gone.device, session: gone.session.id))
        }
        scheduleIdleExit(record)
    }

    /// Removes a route and its children from the books and tells apps, without talking to the
    /// driver (it may be dead). Returns the routes removed and whether each was playing.
    @discardableResult
    func detach(_ route: ActiveRoute, reason: RouteChangeReason, message: String) -> [(ActiveRoute, Bool)] {
        guard routes.isCurrent(route) else { return [] }
        stopWaiting(route)
        var removed: [(ActiveRoute, Bool)] = []
        for child in routes.children(of: route) { removed += detach(child, reason: reason, message: message) }
        routes.remove(route)
        endStreams(of: route, because: message)
        let wasPlaying = route.isPlaying
        endMediaSession(on: route, error: MediaDeviceError(reason == .override ? .sessionFailed : .connectionFailed,
                                                           "the route to \(route.device.displayName) ended: \(message)"))
        if route.parent == nil {
            publish(.deactivated(route: route.description, reason: reason, message: message))
            let level: Logger.Level = reason == .override || isShuttingDown ? .info : .error
            logger.log(level: level, "route inactive: \(route.device.displayName) (\(route.session)): \(message)")
            events.remember("\(route.device.displayName) deactivated: \(message)")
        } else {
            mpris?.take(.deactivated(route: route.description, reason: reason, message: message))
        }
        removed.append((route, wasPlaying))
        return removed
    }

    /// Ends every route of a driver that died or stopped, and fails whatever waited on it. Routes
    /// of a driver that crashed wait for their devices (its restart rediscovers them); a driver
    /// stopped on purpose ends them, and the waits on it.
    func dropRoutes(of record: DriverRecord, reason: String, intentionally: Bool) {
        for route in routes.routes(of: record) where route.parent == nil {
            let message = "driver \(record.id) \(reason)"
            if isShuttingDown || intentionally {
                detach(route, reason: isShuttingDown ? .override : .oldDeviceUnavailable, message: message)
            } else if route.reconnect == nil {
                _ = deviceWentAway(route, message: message)
            }
        }
        for mailbox in routes.mailboxes.values where mailbox.protocolID == record.id {
            mailbox.deliver(.aborted(MediaDeviceError(.driverFailed, "driver \(record.id) \(reason)")))
        }
    }

    /// The driver no longer sees these devices: their routes end, and what played on them pauses.
    func devicesLost(_ ids: Set<String>, of record: DriverRecord) {
        for route in routes.routes(of: record) where route.parent == nil && route.reconnect == nil && ids.contains(route.device.id) {
            // Detached now, so nothing new starts on it; the driver is told right after.
            let ended = deviceWentAway(route, message: "\(route.device.displayName) is no longer reachable")
            Task { await self.finishAtDriver(ended, pausing: true, record: record) }
        }
    }

    /// A device dropped its activation on its own: the route ends; the driver releases the session.
    func deviceDropped(_ report: FromDriver.Deactivated, of record: DriverRecord) {
        guard let route = routes[report.session], route.record === record, route.reconnect == nil else { return }
        let ended = deviceWentAway(route, message: report.error.message)
        Task { await self.finishAtDriver(ended, pausing: false, record: record) }
    }

    /// A driver reported new properties for devices; active routes to them take the new description.
    func devicesChanged(_ devices: [MediaOutputDevice], of record: DriverRecord) {
        for device in devices {
            for route in routes.routes(of: record) where route.device.id == device.id && route.device != device {
                route.device = device
                announceUpdate(route)
            }
        }
        devicesSeen(devices, of: record)
    }
}
