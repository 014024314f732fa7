import MediaDevice
import MediaRouteIPC

/// The operator's commands on drivers and preferences. Decisions persist in the operator's book;
/// manifests are re-read on `enable` and on `reloadManifests` (SIGHUP), so an edited manifest
/// takes effect without restarting the daemon.
extension Supervisor {
    public func driverStatuses() -> [DriverStatus] { fleet.statuses(disabled: book.state.disabledDrivers) }

    /// Re-reads the manifests: new drivers become available, changed ones apply from their next
    /// start (a refused one may start again), and drivers whose manifest is gone are stopped.
    public func reloadManifests() async {
        let gone = fleet.load()
        for problem in fleet.refused { logger.error("refused driver manifest \(problem)") }
        logger.info("manifests re-read: \(fleet.records.count) driver(s): \(fleet.records.map(\.id).joined(separator: ", "))")
        for record in gone {
            if let process = record.process { await stop(process, .disabledByOperator) }
            record.cancelTimers(loop)
        }
        await stopDriversDisabledByConfiguration()
        endOrphanedRemoteSessions()
        if !pickers.isEmpty {
            for record in fleet.drivers where isEligible(record) && record.process == nil { await startDiscovery(record) }
        }
    }

    /// Restarts a running driver now (an operator's request; not counted against its budget).
    public func restartDriver(_ protocolID: String) async throws {
        let record = try fleet.require(protocolID)
        if let process = record.process {
            process.kill(.restartedByOperator)
            _ = await process.waitForTermination()
        }
        _ = try await ensureRunning(record)
    }

    /// Lets a failed, refused or disabled driver start again, with a fresh restart budget and its
    /// manifest re-read; persisted.
    public func enableDriver(_ protocolID: String) async throws {
        await reloadManifests()
        let record = try fleet.require(protocolID)
        if configuration.drivers.isDisabled(protocolID) {
            throw MediaDeviceError(.unsupported, "\(protocolID) is disabled in mediarouted's configuration file (enabled: false); change that there and send mediarouted SIGHUP")
        }
        try book.change { $0.disabledDrivers.remove(protocolID) }
        record.budget.reset()
        switch record.phase {
        case .failed, .refused: record.phase = .stopped
        default: break
        }
        if !pickers.isEmpty { await startDiscovery(record) }
    }

    /// Stops a driver and keeps it stopped across daemon restarts, until `enableDriver`.
    public func disableDriver(_ protocolID: String) async throws {
        let record = try fleet.require(protocolID)
        try book.change { $0.disabledDrivers.insert(protocolID) }
        // One waiting to be restarted after a crash is not restarted.
        if case .backingOff = record.phase {
            record.cancelTimers(loop)
            record.phase = .stopped
        }
        if let process = record.process { await stop(process, .disabledByOperator) }
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
        try book.change { $0.preferredProtocols[key] = protocolID }
        publishPicker()
    }
}
