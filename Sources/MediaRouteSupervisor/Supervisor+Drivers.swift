import Foundation
import MediaDevice
import MediaRouteIPC

/// Driver lifecycle: start on demand, heartbeats, exits and the restart budget, idle exit, and
/// requests to a driver with its failures named.
extension Supervisor {
    func isEligible(_ record: DriverRecord) -> Bool {
        switch record.phase {
        case .failed, .refused: false
        default: !isDisabled(record.id)
        }
    }

    /// The running driver, starting it if needed; concurrent callers share one start.
    func ensureRunning(_ record: DriverRecord) async throws -> DriverProcess {
        if isShuttingDown { throw MediaDeviceError(.driverFailed, "the supervisor is shutting down") }
        if configuration.drivers.isDisabled(record.id) {
            throw MediaDeviceError(.driverFailed, "driver \(record.id) is disabled in the configuration file (enabled: false); change that and send mediarouted SIGHUP to start it again")
        }
        if book.isDisabled(record.id) {
            throw MediaDeviceError(.driverFailed, "driver \(record.id) is disabled; `mediaroute enable \(record.id)` starts it again")
        }
        switch record.phase {
        case .running(let process): return process
        case .failed(let why):
            throw MediaDeviceError(.driverFailed, "driver \(record.id) failed (\(why)); `mediaroute enable \(record.id)` starts it again")
        case .refused(let why):
            throw MediaDeviceError(.driverFailed, "driver \(record.id) is refused: \(why); fix its manifest or driver, then `mediaroute enable \(record.id)`")
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
        let id = record.id
        let process: DriverProcess
        do {
            process = try await DriverProcess.start(
                manifest: record.manifest, stateDirectory: stateDirectory, loop: loop, logger: driverLog.logger(for: id, forwardingTo: logger),
                handlers: record.manifest.kind == .protocolDriver ? driverHandlers(id) : extensionHandlers(id),
                // Runs on the loop inside the connection, before it closes: record why the driver is
                // being ended before it can see the closed socket and exit on its own.
                onViolation: { error in self.assumeIsolated { $0.violation(id, error.message) } },
                onExit: { process, termination in self.assumeIsolated { $0.driverExited(id, process, termination) } })
        } catch let error as RPCError where error.code == .identityMismatch {
            // A configuration error: retrying cannot help until the manifest or the driver changes.
            record.startTask = nil
            record.phase = .refused(error.message)
            record.lastExit = "refused at the handshake"
            logger.error("\(record.manifest.kindName) \(record.id) refused: \(error.message)", metadata: record.logMetadata)
            remoteExtensionGaveUp(record, "is refused: \(error.message)")
            throw MediaDeviceError(.driverFailed, "\(record.manifest.kindName) \(record.id) is refused: \(error.message)")
        } catch {
            // Cleared before the restart is scheduled, so the restart starts afresh instead of
            // joining this failed start.
            record.startTask = nil
            let reason = "could not start: \(error)"
            logger.error("\(record.manifest.kindName) \(record.id) \(reason)", metadata: record.logMetadata)
            record.lastExit = reason
            crashed(record, reason: reason)
            throw MediaDeviceError(.driverFailed, "\(record.manifest.kindName) \(record.id) \(reason)")
        }
        record.startTask = nil
        record.phase = .running(process)
        // Disabled while it started (the operator, or a configuration reloaded meanwhile): it stops.
        if isDisabled(record.id) {
            let reason: StopReason = book.isDisabled(record.id) ? .disabledByOperator : .disabledByConfiguration
            await stop(process, reason)
            throw MediaDeviceError(.driverFailed, "\(record.manifest.kindName) \(record.id) was disabled while it started")
        }
        // A driver that ended right after its handshake may have been reported on the loop before
        // this actor resumed here, while the record was still starting: that report was passed
        // over, so the exit is taken now (restart budget and all) instead of being lost.
        if let termination = process.termination {
            driverExited(id, process, termination)
            throw MediaDeviceError(.driverFailed, "driver \(record.id) (pid \(process.pid)) \(termination) right after its handshake")
        }
        logger.info("\(record.manifest.kindName) \(record.id) running (pid \(process.pid))", metadata: record.logMetadata)
        watchConnection(process)
        startHeartbeat(record, process)
        if record.manifest.kind != .protocolDriver {
            Task { await self.remakeRemoteSessions(record) }
        } else if !pickers.isEmpty || awaitsReturn(record) {
            Task { await self.startDiscovery(record) }
        } else {
            scheduleIdleExit(record)
        }
        return process
    }

    /// A connection that closes while the process lives (protocol violation, closed socket) ends the process.
    private func watchConnection(_ process: DriverProcess) {
        Task {
            let reason = await process.connection.waitUntilClosed()
            if process.termination == nil && process.stopReason == nil {
                process.kill(reason.code == .connectionClosed ? .closedChannel : .killed("violated the protocol: \(reason.message)"))
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
                    _ = try await process.connection.call(ToDriver.Ping(), timeout: timeouts.heartbeatTimeout)
                    forgiven = 0
                } catch let error as RPCError where error.code == .timedOut {
                    guard process.termination == nil, process.stopReason == nil else { return }
                    if record.messagesReceived != heard && forgiven < Self.heartbeatsForgivenWhileTalking {
                        forgiven += 1
                        continue
                    }
                    let why = "hung: no heartbeat answer within \(timeouts.heartbeatTimeout.milliseconds) ms"
                    logger.error("driver \(record.id) is \(why); killing it", metadata: record.logMetadata)
                    process.kill(.killed(why))
                    return
                } catch {
                    return
                }
            }
        }
    }

    private func driverExited(_ id: String, _ process: DriverProcess, _ termination: ChildProcess.Termination) {
        guard let record = fleet.record(id), case .running(let current) = record.phase, current === process else { return }
        record.heartbeat?.cancel()
        record.cancelIdleTimer(loop)
        Task { await process.connection.close() }
        let hadDevices = !record.devices.isEmpty
        record.clearDevices()
        let stopReason = process.stopReason(explaining: termination)
        let description = stopReason.map { $0.isIntentional ? "\($0)" : "\($0) (\(termination))" } ?? "\(termination)"
        dropRoutes(of: record, reason: description, intentionally: stopReason?.isIntentional == true)
        record.isDiscovering = false
        if hadDevices { publishPicker() }
        record.lastExit = description
        if stopReason?.isIntentional == true || isShuttingDown {
            record.phase = .stopped
            logger.info("\(record.manifest.kindName) \(record.id) stopped: \(description)", metadata: record.logMetadata)
        } else {
            logger.error("\(record.manifest.kindName) \(record.id) (pid \(process.pid)) \(description)", metadata: record.logMetadata)
            crashed(record, reason: description)
        }
        if record.manifest.kind != .protocolDriver { remoteExtensionExited(record, description) }
    }

    /// Applies the restart policy after a crash (or a failed start).
    private func crashed(_ record: DriverRecord, reason: String) {
        switch record.budget.crashed(at: .now) {
        case .giveUp(let count):
            let why = "\(count) crashes within \(record.manifest.restart.period.milliseconds / 1000) s, the last: \(reason)"
            record.phase = .failed(why)
            logger.critical("\(record.manifest.kindName) \(record.id) failed: \(why); it stays down until `mediaroute enable \(record.id)`", metadata: record.logMetadata)
            remoteExtensionGaveUp(record, "failed: \(why)")
            endWaits(of: record, message: "driver \(record.id) failed (\(why))")
        case .restart(let delay):
            record.restarts += 1
            record.phase = .backingOff(until: .now + delay)
            logger.notice("restarting \(record.manifest.kindName) \(record.id) in \(delay.milliseconds) ms (restart \(record.restarts))", metadata: record.logMetadata)
            let id = record.id
            record.restartTimer = loop.schedule(after: delay) { [self] in
                assumeIsolated { supervisor in
                    guard let record = supervisor.fleet.record(id), case .backingOff = record.phase else { return }
                    Task { _ = try? await supervisor.ensureRunning(record) }
                }
            }
        }
    }

    /// Nothing for the driver to do: no picker open and no route on it (for an extension: no session).
    private func isIdle(_ record: DriverRecord) -> Bool {
        switch record.manifest.kind {
        case .protocolDriver: pickers.isEmpty && !routes.uses(record)
        case .remoteMediaExtension(let application): remote.entries(of: application).isEmpty
        }
    }

    /// With nothing to do, a driver exits after its manifest's grace period.
    func scheduleIdleExit(_ record: DriverRecord) {
        guard isIdle(record), let process = record.process else { return }
        record.cancelIdleTimer(loop)
        let id = record.id
        record.idleTimer = loop.schedule(after: record.manifest.timeouts.idleExit) { [self] in
            assumeIsolated { supervisor in
                guard let record = supervisor.fleet.record(id), supervisor.isIdle(record), record.process === process else { return }
                // An activation under way (begun after its discovery closed the picker) is not idle:
                // look again after another grace period, when it has a route or has failed.
                guard !supervisor.routes.isWaiting(on: record) else {
                    supervisor.logger.debug("driver \(id) is idle but an activation through it is under way: not stopping it")
                    return supervisor.scheduleIdleExit(record)
                }
                Task { await supervisor.stop(process, .idle) }
            }
        }
    }

    /// Ends a driver on purpose: close its channel (an SDK driver exits), SIGTERM, then SIGKILL.
    func stop(_ process: DriverProcess, _ reason: StopReason) async {
        process.noteStop(reason)
        await process.connection.close()
        process.child.signal(SIGTERM)
        let killer = loop.schedule(after: .seconds(2)) { process.child.signal(SIGKILL) }
        _ = await process.waitForTermination()
        loop.cancelTimer(killer)
    }

    /// One request to a driver; failures become `MediaDeviceError`s that name the driver, and a
    /// driver that dies mid-request is named with its signal or exit status.
    @discardableResult
    func call<Request: WireRequest>(_ record: DriverRecord, _ request: Request, descriptors: [Int32] = []) async throws -> Request.Result {
        let process = try await ensureRunning(record)
        let method = Request.method
        do {
            return try await process.connection.call(request, descriptors: descriptors)
        } catch let error as RPCError where error.code == .timedOut {
            process.kill(.killed("hung: no answer to \"\(method)\" within \(record.manifest.timeouts.request.milliseconds) ms"))
            throw MediaDeviceError(.timedOut, "\(record.manifest.kindName) \(record.id) did not answer \"\(method)\" in time and was restarted")
        } catch let error as RPCError where error.code == .connectionClosed {
            let termination = await process.waitForTermination()
            throw MediaDeviceError(.driverFailed, "\(record.manifest.kindName) \(record.id) (pid \(process.pid)) \(process.stopReason(explaining: termination).map { "\($0), " } ?? "")\(termination) while handling \"\(method)\"")
        } catch let error as RPCError {
            throw MediaDeviceError(rpcError: error)
        }
    }

    /// One request to a driver by protocol identifier (tests and benchmarks).
    @discardableResult
    package func call<Request: WireRequest>(driver protocolID: String, _ request: Request) async throws -> Request.Result {
        try await call(try fleet.require(protocolID), request)
    }

    /// Tells a driver something whatever becomes of the request that led to it (it may be cancelled).
    func tellDriver<Request: WireRequest>(_ record: DriverRecord, _ request: Request) {
        Task { _ = try? await self.call(record, request) }
    }
}
