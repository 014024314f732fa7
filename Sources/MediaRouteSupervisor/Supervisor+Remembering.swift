import Foundation
import MediaDevice
import MediaRouteIPC

/// What the supervisor remembers of devices and routes across rediscovery, driver restarts and
/// restarts of the daemon: nicknames, each device's last volume and mute (restored when it is
/// activated, before anything plays), and the routes to bring back (`Supervisor+Reconnect`).
/// Both files are written atomically and paced (`WritePacing`).
extension Supervisor {
    /// The two state files this extension writes.
    enum RememberedFile { case devices, routes }

    func loadRememberedState() {
        if let problem = remembered.load() { logger.error("\(problem)") }
        bringBackSavedRoutes()
    }

    /// Writes `file` once its pacing allows, or `immediately` (an operator's command, answered once
    /// it is on disk); a failure is logged (the previous version stays whole).
    func persist(_ file: RememberedFile, immediately: Bool = false) {
        let pacing = pacing(of: file)
        if immediately, let scheduled = pacing.scheduled {
            loop.cancelTimer(scheduled)
            pacing.scheduled = nil
        }
        if immediately { return write(file) }
        guard pacing.scheduled == nil else { return }
        let wait = pacing.wait()
        guard wait > .zero else { return write(file) }
        pacing.scheduled = loop.schedule(after: wait) { [self] in
            assumeIsolated { supervisor in
                supervisor.pacing(of: file).scheduled = nil
                supervisor.write(file)
            }
        }
    }

    private func pacing(of file: RememberedFile) -> WritePacing { file == .devices ? remembered.pacing : savedRoutes.pacing }

    private func write(_ file: RememberedFile) {
        do {
            switch file {
            case .devices:
                remembered.pacing.wrote()
                try remembered.save()
            case .routes:
                let current = routesToSave()
                guard savedRoutes.needsWriting(current) else { return }
                savedRoutes.pacing.wrote()
                try savedRoutes.save(current)
            }
        } catch {
            logger.error("cannot save \(file == .devices ? remembered.path : savedRoutes.path): \(error)")
        }
    }

    /// A route or session changed: the saved routes follow (not while shutting down: what was
    /// saved on the way down is what the next start brings back).
    func routesChanged() {
        guard !isShuttingDown, configuration.reconnectWindow > .zero else { return }
        guard savedRoutes.needsWriting(routesToSave()) else { return }
        persist(.routes)
    }

    /// The routes as they would come back: main routes only (a child route is a session's own
    /// activation), the session's state as the supervisor last stored it.
    func routesToSave() -> [SavedRoute] {
        routes.all.filter { $0.parent == nil }.map { route in
            SavedRoute(protocol: route.record.id, device: route.device, simultaneousSessions: route.simultaneousSessions,
                       reconnectingUntil: route.reconnect?.until.timeIntervalSince1970,
                       session: route.url.flatMap { url in route.playback.map { .init(url: url, application: route.application, state: $0.status) } })
        }
    }

    /// On a clean stop: the routes, their positions fresh, for the next start to bring back.
    func saveRoutesForTheNextStart() {
        guard configuration.reconnectWindow > .zero, !isShuttingDown else { return }
        if let scheduled = savedRoutes.pacing.scheduled { loop.cancelTimer(scheduled) }
        savedRoutes.pacing.scheduled = nil
        do { try savedRoutes.save(routesToSave()) } catch { logger.error("cannot save \(savedRoutes.path): \(error)") }
    }

    // MARK: Devices

    /// A device as a driver reported it, shown under its nickname if it has one.
    func shown(_ device: MediaOutputDevice, of record: DriverRecord) -> MediaOutputDevice {
        let (shown, changed) = remembered.shown(device, of: record.id)
        if changed { persist(.devices) }
        return shown
    }

    /// The volume and mute of an active device, as its driver reports them, remembered for its next activation.
    func rememberVolume(of route: ActiveRoute) {
        guard route.volume != nil || route.muted != nil else { return }
        let changed = remembered.change(route.record.id, route.device, ownName: route.device.displayName) { entry in
            if let volume = route.volume { entry.volume = volume }
            if let muted = route.muted { entry.muted = muted }
        }
        if changed { persist(.devices) }
    }

    /// Sets a device just activated to its remembered volume and mute, before the route is
    /// announced (so before anything can play on it): an absolute level is set as it was; a device
    /// with relative volume (steps from a level the system does not know) or none keeps its own,
    /// and only its mute is restored. Returns the driver's reading afterwards, nil if nothing was restored.
    func restoreRememberedVolume(_ record: DriverRecord, _ device: MediaOutputDevice) async -> (volume: Float?, muted: Bool?)? {
        guard let entry = remembered[record.id, device.id] else { return nil }
        var restored: [String] = []
        if device.volumeControl == .absolute, let level = entry.volume,
           (try? await call(record, ToDriver.SetVolume(device: device, volume: Double(level)))) != nil {
            restored.append("volume \(Int((level * 100).rounded()))%")
        }
        if device.canMute, let muted = entry.muted {
            let done = muted ? (try? await call(record, ToDriver.Mute(device: device))) != nil : (try? await call(record, ToDriver.Unmute(device: device))) != nil
            if done { restored.append(muted ? "muted" : "not muted") }
        }
        guard !restored.isEmpty else { return nil }
        logger.info("\(device.displayName): restored its remembered \(restored.joined(separator: ", "))")
        guard let reading = try? await call(record, ToDriver.GetVolume(device: device)) else { return nil }
        return (reading.volume, reading.muted)
    }

    /// Gives a device (a picker name, a device id, or an active route's name) a nickname, or its
    /// own name back (`nickname` nil). The nickname is what the picker, routes and logs show, and
    /// names the device in every command; every protocol's view of the device takes it, and a
    /// preferred protocol follows it.
    package func rename(_ device: String, to nickname: String?) throws {
        let key = PickerEntry.key(device)
        let targets: [(record: DriverRecord, device: MediaOutputDevice)]
        if let entry = pickerEntries().first(where: { PickerEntry.key($0.name) == key || $0.routes.contains { $0.device.id == device } }) {
            targets = try entry.routes.map { (try fleet.require($0.protocolID), $0.device) }
        } else if let route = try? routes.named(device) {
            targets = [(route.record, route.device)]
        } else {
            throw MediaDeviceError(.deviceNotFound, "no device \"\(device)\" is in the picker or active; run `mediaroute devices` to see them")
        }
        let oldName = targets[0].device.displayName
        if let nickname {
            guard targets[0].device.named(nickname) != nil else {
                throw MediaDeviceError(.invalidDevice, "a nickname must be 1 to 128 printable characters, not \"\(nickname)\"")
            }
            let taken = pickerEntries().contains { PickerEntry.key($0.name) == PickerEntry.key(nickname) && PickerEntry.key($0.name) != PickerEntry.key(oldName) }
            guard !taken else { throw MediaDeviceError(.busy, "another device is called \"\(nickname)\"; choose another nickname") }
        }
        var newName = oldName
        for (record, shownDevice) in targets {
            let ownName = remembered[record.id, shownDevice.id]?.ownName ?? shownDevice.displayName
            remembered.change(record.id, shownDevice, ownName: ownName) { $0.nickname = nickname }
            guard let renamed = shownDevice.named(nickname ?? ownName) else { continue }
            newName = renamed.displayName
            if record.devices[renamed.id] != nil { record.upsert(renamed) }
            devicesChanged([renamed], of: record)
        }
        persist(.devices, immediately: true)
        if let preferred = book.state.preferredProtocols[PickerEntry.key(oldName)], PickerEntry.key(oldName) != PickerEntry.key(newName) {
            try book.change {
                $0.preferredProtocols[PickerEntry.key(oldName)] = nil
                $0.preferredProtocols[PickerEntry.key(newName)] = preferred
            }
        }
        logger.info("\(oldName) is now shown as \(newName)")
        publishPicker()
    }
}
