import MediaDevice
import MediaRouteIPC

/// What drivers report: each notification decoded into its type (a report that does not decode is
/// a violation, named), counted against the flood limit, and handed to the part it concerns.
extension Supervisor {
    func driverHandlers(_ id: String) -> RPCHandlers {
        var handlers = RPCHandlers()
        func on<Report: WireNotification>(_ type: Report.Type, _ body: @escaping @Sendable (isolated Supervisor, Report, DriverRecord) throws(RPCError) -> Void) {
            report(type, from: id, into: &handlers, body)
        }
        on(FromDriver.DeviceFound.self) { supervisor, report, record throws(RPCError) in
            let device = try Self.checked(report.device, from: record)
            guard record.devices[device.id] != nil || record.devices.count < Self.deviceLimit else {
                throw RPCError(.overloaded, "reported more than \(Self.deviceLimit) devices")
            }
            let shown = supervisor.shown(device, of: record)
            record.upsert(shown)
            supervisor.publishPicker()
            supervisor.devicesChanged([shown], of: record)
        }
        on(FromDriver.DeviceLost.self) { supervisor, report, record in
            if record.remove(report.id) {
                supervisor.publishPicker()
                supervisor.devicesLost([report.id], of: record)
            }
        }
        on(FromDriver.DevicesUpdated.self) { supervisor, report, record throws(RPCError) in
            guard report.devices.count <= Self.deviceLimit else { throw .invalidParams("devices.updated: at most \(Self.deviceLimit) \"devices\"") }
            var devices: [MediaOutputDevice] = []
            for reported in report.devices { devices.append(supervisor.shown(try Self.checked(reported, from: record), of: record)) }
            let before = Set(record.devices.keys)
            record.replaceDevices(devices)
            supervisor.publishPicker()
            supervisor.devicesChanged(devices, of: record)
            supervisor.devicesLost(before.subtracting(record.devices.keys), of: record)
        }
        on(FromDriver.Activated.self) { supervisor, report, record in supervisor.deliver(report.session, .activated, from: record) }
        on(FromDriver.ActivationFailed.self) { supervisor, report, record in supervisor.deliver(report.session, .activationFailed(report.error), from: record) }
        on(FromDriver.Deactivated.self) { supervisor, report, record in supervisor.deviceDropped(report, of: record) }
        on(FromDriver.PairingRequested.self) { supervisor, report, record in
            supervisor.deliver(report.session, .pairingRequested(reason: report.reason, method: report.authorizationMethod), from: record)
        }
        on(FromDriver.SessionStarted.self) { supervisor, report, record in supervisor.sessionStarted(report, by: record) }
        on(FromDriver.SessionFailed.self) { supervisor, report, record in
            // A start taken in is a session: its failure ends it as any later one does.
            if supervisor.routes.mailboxes[report.session] != nil, supervisor.routes[report.session]?.sessionStart?.takenIn != true {
                supervisor.deliver(report.session, .sessionFailed(report.error), from: record)
            } else if supervisor.routes[report.session]?.record === record {
                supervisor.sessionFailedLater(report.session, report.error)
            }
        }
        on(FromDriver.PlaybackState.self) { supervisor, report, record in
            guard let route = supervisor.routes[report.session], route.record === record else { return }
            // During a start, the state comes with `session.started`; reports count from then.
            guard route.sessionStart?.takenIn ?? true, route.playback != nil, !route.isSessionParked else { return }
            let stored = route.store(playback: report.state)
            supervisor.publish(.playback(session: report.session, owner: route.mediaOwner, state: stored))
        }
        on(FromDriver.VolumeChanged.self) { supervisor, report, record in
            for route in supervisor.routes.routes(of: record) where route.device.id == report.device && route.reconnect == nil {
                supervisor.volumeChanged(route, volume: report.volume, muted: report.muted)
            }
        }
        on(FromDriver.DataToApplication.self) { supervisor, report, record throws(RPCError) in
            try supervisor.dataFromDevice(report, record: record)
        }
        on(FromDriver.RemoteCommand.self) { supervisor, report, record in
            // A route that just ended is dropped quietly, as data is: the driver may not know yet.
            guard let route = supervisor.routes[report.session], route.record === record else { return }
            supervisor.publish(.remoteCommand(route: route.parent ?? route.session.id, command: report.command,
                                              streamOwners: Set(route.streams.values.map(\.owner))))
        }
        on(FromDriver.StreamFailed.self) { supervisor, report, record in supervisor.streamFailed(report.stream, report.error, record: record) }
        on(FromDriver.DiscoveryFailed.self) { supervisor, report, record in
            record.lastDiscoveryError = report.error.message
            supervisor.logger.error("driver \(record.id): discovery failed: \(report.error.message)")
        }
        return handlers
    }

    /// Takes `Report`s from the process of record `id` (a driver or an extension) on the supervisor's
    /// executor: counted against the flood limit, and one that does not decode is a violation.
    nonisolated func report<Report: WireNotification>(_ type: Report.Type, from id: String, into handlers: inout RPCHandlers,
                                                       _ body: @escaping @Sendable (isolated Supervisor, Report, DriverRecord) throws(RPCError) -> Void) {
        handlers.onNotification(Report.method) { [self] notification in
            assumeIsolated { supervisor in
                guard let record = supervisor.fleet.record(id), supervisor.countMessage(record) else { return }
                do throws(RPCError) {
                    try body(supervisor, try Report.decode(notification.params), record)
                } catch {
                    supervisor.violation(id, error.message)
                }
            }
        }
    }

    /// Hands a driver's report about a session to whoever waits for it: only the report of the
    /// driver waited for (another's is dropped: it names a session that is not its own).
    private func deliver(_ session: String, _ event: SessionEvent, from record: DriverRecord) {
        guard let mailbox = routes.mailboxes[session], mailbox.protocolID == record.id else { return }
        mailbox.deliver(event)
    }

    /// A device from a driver, refusing one that claims another protocol.
    private static func checked(_ reported: ReportedDevice, from record: DriverRecord) throws(RPCError) -> MediaOutputDevice {
        if let claimed = reported.claimedProtocol, claimed != record.id {
            throw RPCError(.invalidParams, "reported a device of protocol \(claimed)")
        }
        return reported.device
    }

    /// Counts a message against the flood limit; false (and the driver is ended) once over it.
    private func countMessage(_ record: DriverRecord) -> Bool {
        guard record.countMessage(limit: Self.floodLimit) else {
            violation(record.id, "flooding: more than \(Self.floodLimit) messages within one second")
            return false
        }
        return true
    }

    func violation(_ id: String, _ message: String) {
        guard let record = fleet.record(id), let process = record.process, process.stopReason == nil else {
            logger.error("\(fleet.record(id)?.manifest.kindName ?? "driver") \(id) violated the protocol while starting: \(message)")
            return
        }
        logger.error("\(record.manifest.kindName) \(record.id) violated the protocol: \(message); killing it")
        process.kill(.killed("violated the protocol: \(message)"))
    }
}
