import DBus
import MediaDevice

/// The driver's side of BlueZ: the system bus, BlueZ's objects as they change, and our agent,
/// endpoint and player registered with it. Follows `org.bluez` leaving and coming back
/// (bluetoothd restarted): everything is registered again and the tree reloaded.
@MainActor
final class BlueZConnection {
    enum Event {
        case changed([BlueZObjects.Change])
        case appeared
        case vanished
    }

    private(set) var bus: DBusConnection?
    private(set) var objects = BlueZObjects()
    /// Whether `org.bluez` has an owner on the bus.
    private(set) var isPresent = false
    /// Adapters our endpoint and player are registered on.
    private var registeredAdapters: Set<DBusObjectPath> = []
    private var listeners: [Task<Void, Never>] = []
    var onEvent: (Event) -> Void = { _ in }

    let agent = PairingAgent()
    let endpoint = SBCSourceEndpoint()
    let player = RemoteControlPlayer()

    /// Connects to the system bus (`DBUS_SYSTEM_BUS_ADDRESS` if set) and follows BlueZ; does
    /// nothing once connected. BlueZ itself being absent is not an error here: `isPresent` says it.
    func start() async throws(MediaDeviceError) {
        guard bus == nil else { return }
        let bus: DBusConnection
        do {
            bus = try await DBusConnection.system()
            try await bus.export([agent.interface()], at: BlueZ.agentPath)
            try await bus.export([endpoint.interface()], at: BlueZ.endpointPath)
            try await bus.export([player.interface()], at: BlueZ.playerPath)
        } catch {
            throw MediaDeviceError(.discoveryFailed, "cannot use the system D-Bus, where BlueZ lives: \(error)")
        }
        self.bus = bus
        do {
            let fromBlueZ = try await bus.signals(matching: DBusMatchRule(sender: BlueZ.service))
            let owners = try await bus.signals(matching: DBusMatchRule(sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus",
                                                                      member: "NameOwnerChanged", arg0: BlueZ.service))
            listeners = [
                Task { for await signal in fromBlueZ { self.received(signal) } },
                Task { for await signal in owners { if let change = NameOwnerChangedSignal(signal) { await self.ownerChanged(change) } } },
                Task {
                    await bus.waitUntilClosed()
                    self.busClosed()
                },
            ]
        } catch {
            await bus.close()
            self.bus = nil
            throw MediaDeviceError(.discoveryFailed, "cannot follow BlueZ's signals on the system bus: \(error)")
        }
        if (try? await bus.nameHasOwner(BlueZ.service)) == true { await appeared() }
    }

    /// A call to BlueZ; a sentence naming the failure when there is no bus.
    @discardableResult
    func call(_ path: DBusObjectPath, _ interface: String, _ method: String, _ arguments: [DBusValue] = [],
              timeout: Duration = .seconds(25)) async throws(DBusError) -> [DBusValue] {
        guard let bus else { throw DBusError(name: DBusError.disconnected, message: "not connected to the system bus") }
        return try await bus.call(destination: BlueZ.service, path: path, interface: interface, method: method, arguments, timeout: timeout)
    }

    func setProperty(_ name: String, of interface: String, at path: DBusObjectPath, to value: DBusValue) async throws(DBusError) {
        guard let bus else { throw DBusError(name: DBusError.disconnected, message: "not connected to the system bus") }
        try await bus.setProperty(name, of: interface, at: path, on: BlueZ.service, to: value)
    }

    /// Tells devices what plays now (AVRCP status), so their play/pause button toggles correctly.
    func setPlayerStatus(_ status: String) {
        guard player.status != status else { return }
        player.status = status
        guard let bus else { return }
        Task { try? await bus.emitPropertiesChanged(path: BlueZ.playerPath, interface: BlueZ.mediaPlayer, changed: ["PlaybackStatus": .string(status)]) }
    }

    // MARK: BlueZ's signals

    private func received(_ signal: DBusSignal) {
        var changes: [BlueZObjects.Change] = []
        if let added = InterfacesAddedSignal(signal) {
            changes = objects.added(added.path, added.interfaces)
        } else if let removed = InterfacesRemovedSignal(signal) {
            changes = objects.removed(removed.path, removed.interfaces)
            if removed.interfaces.contains(BlueZ.adapter) { registeredAdapters.remove(removed.path) }
        } else if let properties = PropertiesChangedSignal(signal) {
            changes = objects.changed(signal.path, properties)
        }
        guard !changes.isEmpty else { return }
        onEvent(.changed(changes))
        if changes.contains(where: { if case .adapterChanged = $0 { true } else { false } }) { Task { await self.registerOnAdapters() } }
    }

    private func ownerChanged(_ change: NameOwnerChangedSignal) async {
        if change.newOwner.isEmpty { vanished() } else { await appeared() }
    }

    private func appeared() async {
        guard let bus, !isPresent else { return }
        isPresent = true
        registeredAdapters = []
        do {
            try await call("/org/bluez", BlueZ.agentManager, "RegisterAgent", [.objectPath(BlueZ.agentPath), .string(PairingAgent.capability)])
            try await call("/org/bluez", BlueZ.agentManager, "RequestDefaultAgent", [.objectPath(BlueZ.agentPath)])
            let tree = try await bus.managedObjects(on: BlueZ.service)
            let changes = objects.load(tree)
            onEvent(.appeared)
            onEvent(.changed(changes))
            await registerOnAdapters()
        } catch {
            log("BlueZ is on the bus but does not answer as expected: \(error)")
        }
    }

    /// Registers our endpoint and player on every adapter that has none of ours yet.
    private func registerOnAdapters() async {
        for adapter in objects.adapters.keys where !registeredAdapters.contains(adapter) {
            registeredAdapters.insert(adapter)
            do {
                try await call(adapter, BlueZ.media, "RegisterEndpoint", [.objectPath(BlueZ.endpointPath), .properties(SBCSourceEndpoint.registration)])
                try await call(adapter, BlueZ.media, "RegisterPlayer", [.objectPath(BlueZ.playerPath), .properties(RemoteControlPlayer.registration(status: player.status))])
            } catch {
                log("cannot register the A2DP source on \(adapter): \(error)")
            }
        }
    }

    private func vanished() {
        guard isPresent else { return }
        isPresent = false
        registeredAdapters = []
        endpoint.forgetAll()
        let changes = objects.clear()
        onEvent(.changed(changes))
        onEvent(.vanished)
    }

    private func busClosed() {
        vanished()
        listeners.forEach { $0.cancel() }
        listeners = []
        bus = nil
    }
}
