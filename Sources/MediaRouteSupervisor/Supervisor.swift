import Foundation
import Logging
import MediaDevice
import MediaRouteIPC

/// Where the supervisor finds drivers and keeps its state.
public struct SupervisorConfiguration: Sendable {
    public var driversDirectories: [String]
    /// Holds `state.json` (operator decisions) and one private directory per driver.
    public var stateDirectory: String

    public init(driversDirectories: [String], stateDirectory: String) {
        self.driversDirectories = driversDirectories
        self.stateDirectory = stateDirectory
    }
}

/// The supervisor: runs every driver as its own process, brokers discovery for route pickers,
/// and contains drivers that crash, hang, flood or lie, so the rest keeps working.
///
/// An actor on the IPC event loop: driver messages arrive on the same thread that runs it.
public actor Supervisor {
    public nonisolated let loop: EventLoop
    public nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
    let configuration: SupervisorConfiguration
    let logger: Logger

    private var records: [DriverRecord] = []
    /// Active routes by session id.
    var routes: [String: ActiveRoute] = [:]
    /// Activations and sessions waiting for their driver's report, by session id.
    var mailboxes: [String: SessionMailbox] = [:]
    /// The control socket's clients still connected: what outlives a request is recorded only for them.
    var clients = Set<ClientID>()
    private var nextSessionNumber = 1
    private var nextStreamNumber = 1
    /// Told of every route event (the app connections), by subscription id.
    private var subscribers: [Int: @Sendable (RouteEvent) -> Void] = [:]
    private var nextSubscriberID = 1

    /// Route deactivations and the like, newest last, for `mediaroute status`.
    var recentEvents: [String] = []
    private var refused: [DriverManifest.Problem] = []
    private var operatorState = OperatorState()
    private var pickers: [Int: @Sendable ([PickerEntry]) -> Void] = [:]
    private var nextPickerID = 1
    private(set) var isShuttingDown = false

    /// The longest a picker waits to hear of a change; changes within it are sent as one list.
    static let pickerCoalescing: Duration = .milliseconds(10)
    private var pickerPublication: EventLoop.TimerHandle?
    /// More messages than this from one driver within a second is flooding.
    static let floodLimit = 5000
    /// Heartbeats in a row a driver may miss while it keeps sending (see `startHeartbeat`).
    static let heartbeatsForgivenWhileTalking = 2
    /// More devices than this from one driver is flooding too.
    static let deviceLimit = 1024

    public init(configuration: SupervisorConfiguration, logger: Logger, loop: EventLoop = .shared) {
        self.configuration = configuration
        self.logger = logger
        self.loop = loop
    }

    private var statePath: String { (configuration.stateDirectory as NSString).appendingPathComponent("state.json") }

    /// Loads the manifests and the operator state; refused manifests are logged and listed, the
    /// others are ready to start on demand.
    public func start() throws {
        try FileManager.default.createDirectory(atPath: configuration.stateDirectory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        operatorState = try OperatorState.load(from: statePath)
        let (manifests, problems) = DriverManifest.load(from: configuration.driversDirectories)
        refused = problems
        for problem in problems { logger.error("refused driver manifest \(problem)") }
        records = manifests.map { DriverRecord(manifest: $0) }
        logger.info("\(records.count) driver(s) ready: \(records.map(\.manifest.protocolID).joined(separator: ", "))")
    }

    // MARK: Operator API

    public func driverStatuses() -> [DriverStatus] {
        records.map { record in
            let state: DriverStatus.State
            var pid: Int32? = nil, uptime: Duration? = nil
            switch record.phase {
            case _ where operatorState.disabledDrivers.contains(record.id): state = .disabled
            case .stopped: state = .stopped
            case .starting: state = .starting
            case .running(let process):
                state = .running
                pid = process.pid
                uptime = ContinuousClock.now - process.startedAt
            case .backingOff(let until): state = .restarting(after: max(.zero, until - ContinuousClock.now))
            case .failed(let why): state = .failed(why)
            }
            return DriverStatus(protocolID: record.id, displayName: record.manifest.displayName, manifestPath: record.manifest.path,
                                state: state, pid: pid, restarts: record.restarts, uptime: uptime, lastExit: record.lastExit,
                                deviceCount: record.devices.count)
        } + refused.map {
            DriverStatus(protocolID: "-", displayName: "-", manifestPath: $0.path, state: .refused($0.reason), pid: nil,
                         restarts: 0, uptime: nil, lastExit: nil, deviceCount: 0)
        }
    }

    /// Opens a route picker: eligible drivers start (if needed) and discover. `onChange` gets the
    /// whole list every time it changes, until `closePicker`.
    public func openPicker(onChange: @escaping @Sendable ([PickerEntry]) -> Void) -> (id: Int, entries: [PickerEntry]) {
        let id = nextPickerID
        nextPickerID += 1
        pickers[id] = onChange
        if pickers.count == 1 {
            for record in records where isEligible(record) {
                record.cancelIdleTimer(loop)
                Task { await self.startDiscovery(record) }
            }
        }
        return (id, pickerEntries())
    }

    /// Closes a picker; when the last one closes, discovery stops and idle drivers exit after their grace period.
    public func closePicker(_ id: Int) async {
        guard pickers.removeValue(forKey: id) != nil, pickers.isEmpty else { return }
        for record in records {
            guard case .running = record.phase else { continue }
            if record.isDiscovering {
                record.isDiscovering = false
                _ = try? await call(record, DriverMethod.stopDiscovery)
            }
            scheduleIdleExit(record)
        }
    }

    public func pickerEntries() -> [PickerEntry] {
        var order: [String] = []
        var routes: [String: [PickerEntry.Route]] = [:]
        var names: [String: String] = [:]
        for record in records {
            for device in record.orderedDevices {
                let key = PickerEntry.key(device.displayName)
                if routes[key] == nil {
                    order.append(key)
                    names[key] = device.displayName
                }
                routes[key, default: []].append(PickerEntry.Route(protocolID: record.id, protocolName: record.manifest.displayName, device: device))
            }
        }
        return order.map { key in
            let available = routes[key]!
            let preferred = operatorState.preferredProtocols[key].flatMap { choice in available.first { $0.protocolID == choice }?.protocolID }
            return PickerEntry(name: names[key]!, routes: available, preferredProtocol: preferred ?? available[0].protocolID)
        }
    }

    /// Restarts a running driver now (an operator's request; not counted against its budget).
    public func restartDriver(_ protocolID: String) async throws {
        let record = try record(protocolID)
        if case .running(let process) = record.phase {
            process.stopReason = "restarted by the operator"
            process.kill(reason: "restarted by the operator")
            _ = await process.waitForTermination()
        }
        _ = try await ensureRunning(record)
    }

    /// Lets a failed or disabled driver start again, with a fresh restart budget; persisted.
    public func enableDriver(_ protocolID: String) async throws {
        let record = try record(protocolID)
        operatorState.disabledDrivers.remove(protocolID)
        try saveOperatorState()
        record.budget.reset()
        if case .failed = record.phase { record.phase = .stopped }
        if !pickers.isEmpty { await startDiscovery(record) }
    }

    /// Stops a driver and keeps it stopped across daemon restarts, until `enableDriver`.
    public func disableDriver(_ protocolID: String) async throws {
        let record = try record(protocolID)
        operatorState.disabledDrivers.insert(protocolID)
        try saveOperatorState()
        if case .running(let process) = record.phase { await stop(process, reason: "disabled by the operator") }
    }

    /// Makes `protocolID` the default for the picker entry named `deviceName`; persisted.
    public func setPreferredProtocol(_ protocolID: String, forDevice deviceName: String) throws {
        let key = PickerEntry.key(deviceName)
        guard let entry = pickerEntries().first(where: { PickerEntry.key($0.name) == key }) else {
            throw MediaDeviceError(.deviceNotFound, "no device named \"\(deviceName)\" is in the picker; run `mediaroute devices` to see them")
        }
        guard entry.routes.contains(where: { $0.protocolID == protocolID }) else {
            throw MediaDeviceError(.unsupported, "\"\(entry.name)\" is not reachable through \(protocolID); it is through \(entry.routes.map(\.protocolID).joined(separator: ", "))")
        }
        operatorState.preferredProtocols[key] = protocolID
        try saveOperatorState()
        publishPicker()
    }

    /// Stops every driver (closing its channel, then SIGTERM, then SIGKILL after 2 s).
    public func shutdown() async {
        isShuttingDown = true
        for (id, _) in pickers { pickers[id] = nil }
        for record in records {
            if case .running(let process) = record.phase { await stop(process, reason: "the supervisor is shutting down") }
            record.cancelTimers(loop)
        }
    }

    // MARK: Driver lifecycle

    func makeSessionID() -> String {
        defer { nextSessionNumber += 1 }
        return "s\(nextSessionNumber)"
    }

    func makeStreamID() -> String {
        defer { nextStreamNumber += 1 }
        return "r\(nextStreamNumber)"
    }

    func record(_ protocolID: String) throws -> DriverRecord {
        guard let record = records.first(where: { $0.id == protocolID }) else {
            throw MediaDeviceError(.deviceNotFound, "no driver serves \(protocolID); run `mediaroute drivers` to see them")
        }
        return record
    }

    private func isEligible(_ record: DriverRecord) -> Bool {
        if operatorState.disabledDrivers.contains(record.id) { return false }
        if case .failed = record.phase { return false }
        return true
    }

    /// The running driver, starting it if needed; concurrent callers share one start.
    func ensureRunning(_ record: DriverRecord) async throws -> DriverProcess {
        if isShuttingDown { throw MediaDeviceError(.driverFailed, "the supervisor is shutting down") }
        if operatorState.disabledDrivers.contains(record.id) {
            throw MediaDeviceError(.driverFailed, "driver \(record.id) is disabled; `mediaroute enable \(record.id)` starts it again")
        }
        switch record.phase {
        case .running(let process): return process
        case .failed(let why):
            throw MediaDeviceError(.driverFailed, "driver \(record.id) failed (\(why)); `mediaroute enable \(record.id)` starts it again")
        case .starting, .stopped, .backingOff: break
        }
        if let task = record.startTask { return try await task.value }
        record.phase = .starting
        let task = Task { try await self.launch(record) }
        record.startTask = task
        return try await task.value
    }

    private func launch(_ record: DriverRecord) async throws -> DriverProcess {
        let stateDirectory = (configuration.stateDirectory as NSString).appendingPathComponent("drivers/\(record.id)")
        try? FileManager.default.createDirectory(atPath: stateDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        record.resetFloodWindow()
        let process: DriverProcess
        do {
            process = try await DriverProcess.start(
                manifest: record.manifest, stateDirectory: stateDirectory, loop: loop, logger: logger,
                handlers: driverHandlers(record),
                // Runs on the loop inside the connection, before it closes: record why the driver is
                // being ended before it can see the closed socket and exit on its own.
                onViolation: { error in self.assumeIsolated { $0.violation(record, error.message) } },
                onExit: { process, termination in self.assumeIsolated { $0.driverExited(record, process, termination) } })
        } catch {
            // Cleared before the restart is scheduled, so the restart starts afresh instead of
            // joining this failed start.
            record.startTask = nil
            let reason = "could not start: \(error)"
            logger.error("driver \(record.id) \(reason)")
            record.lastExit = reason
            crashed(record, reason: reason)
            throw MediaDeviceError(.driverFailed, "driver \(record.id) \(reason)")
        }
        record.startTask = nil
        record.phase = .running(process)
        logger.info("driver \(record.id) running (pid \(process.pid))")
        watchConnection(record, process)
        startHeartbeat(record, process)
        if !pickers.isEmpty {
            Task { await self.startDiscovery(record) }
        } else {
            scheduleIdleExit(record)
        }
        return process
    }

    /// A connection that closes while the process lives (protocol violation, closed socket) ends the process.
    private func watchConnection(_ record: DriverRecord, _ process: DriverProcess) {
        Task {
            let reason = await process.connection.waitUntilClosed()
            if process.termination == nil && process.stopReason == nil {
                process.kill(reason: reason.code == .connectionClosed ? "closed its IPC channel" : "violated the protocol: \(reason.message)")
            }
        }
    }

    private func startHeartbeat(_ record: DriverRecord, _ process: DriverProcess) {
        let timeouts = record.manifest.timeouts
        record.heartbeat = Task {
            // Heartbeats missed while the driver kept sending: its answer may be waiting behind what
            // it sent, on a supervisor too busy to have read that far. A few are forgiven (and the
            // flood limit judges the sending); a driver that says nothing is hung at the first.
            var forgiven = 0
            while !Task.isCancelled {
                if forgiven == 0 { try? await Task.sleep(for: timeouts.heartbeatInterval) }
                guard !Task.isCancelled, process.termination == nil else { return }
                let heard = record.messagesReceived
                do {
                    _ = try await process.connection.request(DriverMethod.ping, timeout: timeouts.heartbeatTimeout)
                    forgiven = 0
                } catch let error as RPCError where error.code == .timedOut {
                    guard process.termination == nil, process.stopReason == nil else { return }
                    if record.messagesReceived != heard && forgiven < Self.heartbeatsForgivenWhileTalking {
                        forgiven += 1
                        continue
                    }
                    self.logger.error("driver \(record.id) is hung: no heartbeat answer within \(timeouts.heartbeatTimeout.milliseconds) ms; killing it")
                    process.kill(reason: "hung: no heartbeat answer within \(timeouts.heartbeatTimeout.milliseconds) ms")
                    return
                } catch {
                    return
                }
            }
        }
    }

    private func driverExited(_ record: DriverRecord, _ process: DriverProcess, _ termination: ChildProcess.Termination) {
        guard case .running(let current) = record.phase, current === process else { return }
        record.heartbeat?.cancel()
        record.cancelIdleTimer(loop)
        Task { await process.connection.close() }
        let hadDevices = !record.devices.isEmpty
        record.clearDevices()
        dropRoutes(of: record, reason: process.stopReason.map { "\($0) (\(termination))" } ?? "\(termination)")
        record.isDiscovering = false
        if hadDevices { publishPicker() }
        let description = process.stopReason.map { "\($0) (\(termination))" } ?? "\(termination)"
        record.lastExit = description
        let intentional = process.stopReason.map { $0 == "idle" || $0.hasSuffix("by the operator") || $0.hasPrefix("the supervisor") } ?? false
        if intentional || isShuttingDown {
            record.phase = .stopped
            logger.info("driver \(record.id) stopped: \(description)")
            return
        }
        logger.error("driver \(record.id) (pid \(process.pid)) \(description)")
        crashed(record, reason: description)
    }

    /// Applies the restart policy after a crash (or a failed start).
    private func crashed(_ record: DriverRecord, reason: String) {
        switch record.budget.crashed(at: .now) {
        case .giveUp(let count):
            let why = "\(count) crashes within \(record.manifest.restart.period.milliseconds / 1000) s, the last: \(reason)"
            record.phase = .failed(why)
            logger.critical("driver \(record.id) failed: \(why); it stays down until `mediaroute enable \(record.id)`")
        case .restart(let delay):
            record.restarts += 1
            record.phase = .backingOff(until: .now + delay)
            logger.notice("restarting driver \(record.id) in \(delay.milliseconds) ms (restart \(record.restarts))")
            record.restartTimer = loop.schedule(after: delay) { [self] in
                assumeIsolated { supervisor in
                    guard case .backingOff = record.phase else { return }
                    Task { _ = try? await supervisor.ensureRunning(record) }
                }
            }
        }
    }

    func scheduleIdleExit(_ record: DriverRecord) {
        guard pickers.isEmpty, !routes.values.contains(where: { $0.record === record }), case .running(let process) = record.phase else { return }
        record.cancelIdleTimer(loop)
        record.idleTimer = loop.schedule(after: record.manifest.timeouts.idleExit) { [self] in
            assumeIsolated { supervisor in
                guard supervisor.pickers.isEmpty, !supervisor.routes.values.contains(where: { $0.record === record }),
                      case .running(let current) = record.phase, current === process else { return }
                Task { await supervisor.stop(process, reason: "idle") }
            }
        }
    }

    /// Ends a driver on purpose: close its channel (an SDK driver exits), SIGTERM, then SIGKILL.
    private func stop(_ process: DriverProcess, reason: String) async {
        process.stopReason = reason
        await process.connection.close()
        process.child.signal(SIGTERM)
        let killer = loop.schedule(after: .seconds(2)) { process.child.signal(SIGKILL) }
        _ = await process.waitForTermination()
        loop.cancelTimer(killer)
    }

    private func startDiscovery(_ record: DriverRecord) async {
        guard isEligible(record), !pickers.isEmpty else { return }
        do {
            _ = try await call(record, DriverMethod.startDiscovery)
            if pickers.isEmpty {
                // The last picker closed while discovery was starting.
                _ = try? await call(record, DriverMethod.stopDiscovery)
                scheduleIdleExit(record)
            } else {
                record.isDiscovering = true
            }
        } catch {
            logger.error("driver \(record.id) could not start discovery: \(error)")
        }
    }

    /// One request to a driver; failures become `MediaDeviceError`s that name the driver, and a
    /// driver that dies mid-request is named with its signal or exit status.
    func call(_ record: DriverRecord, _ method: String, _ params: JSONObject? = nil, descriptors: [Int32] = []) async throws -> JSONValue {
        let process = try await ensureRunning(record)
        do {
            return try await process.connection.request(method, params, descriptors: descriptors).result
        } catch let error as RPCError where error.code == .timedOut {
            process.kill(reason: "hung: no answer to \"\(method)\" within \(record.manifest.timeouts.request.milliseconds) ms")
            throw MediaDeviceError(.timedOut, "driver \(record.id) did not answer \"\(method)\" in time and was restarted")
        } catch let error as RPCError where error.code == .connectionClosed {
            let termination = await process.waitForTermination()
            throw MediaDeviceError(.driverFailed, "driver \(record.id) (pid \(process.pid)) \(process.stopReason.map { "\($0), " } ?? "")\(termination) while handling \"\(method)\"")
        } catch let error as RPCError {
            throw MediaDeviceError(rpcError: error)
        }
    }

    /// One request to a driver by protocol identifier (operator commands and tests).
    func call(driver protocolID: String, _ method: String, _ params: JSONObject? = nil) async throws -> JSONValue {
        try await call(try record(protocolID), method, params)
    }

    // MARK: What drivers report

    private func driverHandlers(_ record: DriverRecord) -> RPCHandlers {
        var handlers = RPCHandlers()
        let loopSupervisor = self
        func on(_ method: String, _ body: @escaping @Sendable (isolated Supervisor, JSONObject) throws(RPCError) -> Void) {
            handlers.onNotification(method) { notification in
                loopSupervisor.assumeIsolated { supervisor in
                    guard supervisor.countMessage(record) else { return }
                    do { try body(supervisor, notification.params) } catch { supervisor.violation(record, (error as? RPCError)?.message ?? "\(error)") }
                }
            }
        }
        on(DriverMethod.found) { supervisor, params throws(RPCError) in
            let device = try Self.device(params["device"], from: record)
            guard record.devices[device.id] != nil || record.devices.count < Self.deviceLimit else {
                throw RPCError(.overloaded, "reported more than \(Self.deviceLimit) devices")
            }
            record.upsert(device)
            supervisor.publishPicker()
            supervisor.devicesChanged([device], of: record)
        }
        on(DriverMethod.lost) { supervisor, params throws(RPCError) in
            guard let id = params["id"]?.stringValue else { throw .invalidParams("device.lost needs the \"id\" of the device") }
            if record.remove(id) {
                supervisor.publishPicker()
                supervisor.devicesLost([id], of: record)
            }
        }
        on(DriverMethod.updated) { supervisor, params throws(RPCError) in
            guard let list = params["devices"]?.arrayValue, list.count <= Self.deviceLimit else {
                throw .invalidParams("devices.updated needs \"devices\", at most \(Self.deviceLimit)")
            }
            var devices: [MediaOutputDevice] = []
            for value in list { devices.append(try Self.device(value, from: record)) }
            let before = Set(record.devices.keys)
            record.replaceDevices(devices)
            supervisor.publishPicker()
            supervisor.devicesChanged(devices, of: record)
            supervisor.devicesLost(before.subtracting(record.devices.keys), of: record)
        }
        on(DriverMethod.activated) { supervisor, params throws(RPCError) in try supervisor.deliver(params, .activated) }
        on(DriverMethod.activationFailed) { supervisor, params throws(RPCError) in
            try supervisor.deliver(params, .activationFailed(MediaDeviceError(json: params["error"]) ?? MediaDeviceError(.connectionFailed)))
        }
        on(DriverMethod.pairingRequested) { supervisor, params throws(RPCError) in
            guard let method = params["authorizationMethod"].flatMap(MediaOutputDevice.AuthorizationMethod.init(json:)) else {
                throw .invalidParams("device.pairingRequested needs an \"authorizationMethod\"")
            }
            try supervisor.deliver(params, .pairingRequested(reason: params["reason"]?.stringValue ?? "Pairing required", method: method))
        }
        on(DriverMethod.sessionStarted) { supervisor, params throws(RPCError) in
            try supervisor.deliver(params, .started(application: params["application"]?.stringValue, state: params["state"]?.objectValue ?? [:]))
        }
        on(DriverMethod.sessionFailed) { supervisor, params throws(RPCError) in
            let error = MediaDeviceError(json: params["error"]) ?? MediaDeviceError(.sessionFailed)
            guard let session = params["session"]?.stringValue else { throw .invalidParams("session.failed needs \"session\"") }
            if supervisor.mailboxes[session] != nil {
                try supervisor.deliver(params, .sessionFailed(error))
            } else {
                supervisor.sessionFailedLater(session, error)
            }
        }
        on(DriverMethod.playbackState) { supervisor, params throws(RPCError) in
            guard let session = params["session"]?.stringValue, let state = params["state"]?.objectValue else { throw .invalidParams("playback.state needs \"session\" and \"state\"") }
            guard let route = supervisor.routes[session], route.record === record, route.playback != nil, !route.isStartingSession else { return }
            let stored = route.store(playback: state)
            if let owner = route.mediaOwner { supervisor.publish(.playback(session: session, owner: owner, state: stored)) }
        }
        on(DriverMethod.volumeChanged) { supervisor, params throws(RPCError) in
            guard let id = params["device"]?.stringValue else { throw .invalidParams("volume.changed needs \"device\"") }
            for route in supervisor.routes.values where route.record === record && route.device.id == id {
                supervisor.volumeChanged(route, volume: params["volume"]?.doubleValue, muted: params["muted"]?.boolValue)
            }
        }
        on(DriverMethod.dataToApplication) { supervisor, params throws(RPCError) in
            guard let session = params["session"]?.stringValue, let application = params["application"]?.stringValue,
                  let text = params["data"]?.stringValue, let data = Base64.decode(text) else {
                throw .invalidParams("session.dataToApplication needs \"session\", \"application\" and base64 \"data\"")
            }
            try supervisor.dataFromDevice(data, session: session, application: application, record: record)
        }
        on(DriverMethod.streamFailed) { supervisor, params throws(RPCError) in
            guard let stream = params["stream"]?.stringValue else { throw .invalidParams("stream.failed needs \"stream\"") }
            let error = MediaDeviceError(json: params["error"]) ?? MediaDeviceError(.sessionFailed)
            supervisor.streamFailed(stream, error, record: record)
        }
        on(DriverMethod.discoveryFailed) { supervisor, params throws(RPCError) in
            let error = MediaDeviceError(json: params["error"]) ?? MediaDeviceError(.discoveryFailed)
            record.lastDiscoveryError = error.message
            supervisor.logger.error("driver \(record.id): discovery failed: \(error.message)")
        }
        return handlers
    }

    /// Hands a driver's report about a session to whoever waits for it.
    private func deliver(_ params: JSONObject, _ event: SessionEvent) throws(RPCError) {
        guard let session = params["session"]?.stringValue else { throw .invalidParams("missing \"session\"") }
        mailboxes[session]?.deliver(event)
    }

    /// A device from a driver, refusing one that claims another protocol.
    private static func device(_ value: JSONValue?, from record: DriverRecord) throws(RPCError) -> MediaOutputDevice {
        guard let value else { throw .invalidParams("missing \"device\"") }
        if let claimed = value.objectValue?["protocol"]?.stringValue, claimed != record.id {
            throw RPCError(.invalidParams, "reported a device of protocol \(claimed)")
        }
        do { return try MediaOutputDevice(json: value) } catch { throw .invalidParams(error.message) }
    }

    /// Counts a message against the flood limit; false (and the driver is ended) once over it.
    private func countMessage(_ record: DriverRecord) -> Bool {
        guard record.countMessage(limit: Self.floodLimit) else {
            violation(record, "flooding: more than \(Self.floodLimit) messages within one second")
            return false
        }
        return true
    }

    private func violation(_ record: DriverRecord, _ message: String) {
        guard case .running(let process) = record.phase, process.stopReason == nil else {
            logger.error("driver \(record.id) violated the protocol while starting: \(message)")
            return
        }
        logger.error("driver \(record.id) violated the protocol: \(message); killing it")
        process.kill(reason: "violated the protocol: \(message)")
    }

    /// Tells open pickers the list changed, at most once per `pickerCoalescing`: a driver reporting
    /// a hundred devices must not send a hundred whole lists to every picker.
    func publishPicker() {
        guard !pickers.isEmpty, pickerPublication == nil else { return }
        pickerPublication = loop.schedule(after: Self.pickerCoalescing) { [self] in
            assumeIsolated { supervisor in
                supervisor.pickerPublication = nil
                guard !supervisor.pickers.isEmpty else { return }
                let entries = supervisor.pickerEntries()
                for watcher in supervisor.pickers.values { watcher(entries) }
            }
        }
    }

    // MARK: Route events

    /// Calls `handler` on the supervisor's executor with every route event from now on, in order.
    func subscribe(_ handler: @escaping @Sendable (RouteEvent) -> Void) -> Int {
        defer { nextSubscriberID += 1 }
        subscribers[nextSubscriberID] = handler
        return nextSubscriberID
    }

    func unsubscribe(_ id: Int) { subscribers[id] = nil }

    func publish(_ event: RouteEvent) {
        for subscriber in subscribers.values { subscriber(event) }
    }

    private func saveOperatorState() throws {
        do { try operatorState.save(to: statePath) } catch {
            throw MediaDeviceError(.driverFailed, "cannot save the operator state to \(statePath): \(error)")
        }
    }
}
