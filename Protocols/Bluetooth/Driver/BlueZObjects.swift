import DBus

/// BlueZ's object tree as far as the driver cares: adapters, audio devices and media transports,
/// loaded once with `GetManagedObjects` and kept current from `InterfacesAdded`/`Removed` and
/// `PropertiesChanged` (BlueZ announces every change there, so nothing is polled).
struct BlueZObjects {
    struct Adapter: Equatable {
        let path: DBusObjectPath
        var powered: Bool
        var discovering: Bool
    }

    /// A configured A2DP stream to a device (`org.bluez.MediaTransport1`).
    struct Transport: Equatable {
        let path: DBusObjectPath
        let device: DBusObjectPath
        /// 0-127, A2DP's absolute volume (AVRCP 1.4); nil if the device has none.
        var volume: UInt16?
        /// The device's own rendering delay, in tenths of a millisecond.
        var delay: UInt16?
        var state: String
    }

    /// What changed, for the driver to report.
    enum Change: Equatable {
        case deviceAppeared(BluetoothDevice)
        case deviceChanged(old: BluetoothDevice, new: BluetoothDevice)
        case deviceRemoved(BluetoothDevice)
        case adapterChanged(Adapter)
        case adapterRemoved(DBusObjectPath)
        case transportAdded(Transport)
        case transportChanged(Transport)
        case transportRemoved(Transport)
    }

    private(set) var adapters: [DBusObjectPath: Adapter] = [:]
    private(set) var devices: [DBusObjectPath: BluetoothDevice] = [:]
    private(set) var transports: [DBusObjectPath: Transport] = [:]

    /// Replaces everything with a `GetManagedObjects` answer.
    mutating func load(_ objects: [DBusObjectPath: [String: [String: DBusValue]]]) -> [Change] {
        var changes = devices.values.map(Change.deviceRemoved) + transports.values.map(Change.transportRemoved)
        adapters = [:]
        devices = [:]
        transports = [:]
        for (path, interfaces) in objects.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            changes += added(path, interfaces)
        }
        return changes
    }

    mutating func clear() -> [Change] { load([:]) }

    mutating func added(_ path: DBusObjectPath, _ interfaces: [String: [String: DBusValue]]) -> [Change] {
        var changes: [Change] = []
        if let properties = interfaces[BlueZ.adapter] {
            let adapter = Adapter(path: path, powered: properties["Powered"]?.bool ?? false, discovering: properties["Discovering"]?.bool ?? false)
            adapters[path] = adapter
            changes.append(.adapterChanged(adapter))
        }
        if let properties = interfaces[BlueZ.device], let device = BluetoothDevice(path: path, properties: properties) {
            devices[path] = device
            changes.append(.deviceAppeared(device))
        }
        if let properties = interfaces[BlueZ.mediaTransport], let device = properties["Device"]?.objectPath {
            let transport = Transport(path: path, device: device, volume: properties["Volume"]?.uint16, delay: properties["Delay"]?.uint16,
                                      state: properties["State"]?.string ?? "idle")
            transports[path] = transport
            changes.append(.transportAdded(transport))
        }
        return changes
    }

    mutating func removed(_ path: DBusObjectPath, _ interfaces: [String]) -> [Change] {
        var changes: [Change] = []
        if interfaces.contains(BlueZ.mediaTransport), let transport = transports.removeValue(forKey: path) { changes.append(.transportRemoved(transport)) }
        if interfaces.contains(BlueZ.device), let device = devices.removeValue(forKey: path) { changes.append(.deviceRemoved(device)) }
        if interfaces.contains(BlueZ.adapter), adapters.removeValue(forKey: path) != nil { changes.append(.adapterRemoved(path)) }
        return changes
    }

    mutating func changed(_ path: DBusObjectPath, _ signal: PropertiesChangedSignal) -> [Change] {
        switch signal.interface {
        case BlueZ.adapter:
            guard var adapter = adapters[path] else { return [] }
            if let powered = signal.changed["Powered"]?.bool { adapter.powered = powered }
            if let discovering = signal.changed["Discovering"]?.bool { adapter.discovering = discovering }
            adapters[path] = adapter
            return [.adapterChanged(adapter)]
        case BlueZ.device:
            guard let old = devices[path] else { return [] }
            var new = old
            new.apply(signal.changed)
            devices[path] = new
            return new == old ? [] : [.deviceChanged(old: old, new: new)]
        case BlueZ.mediaTransport:
            guard var transport = transports[path] else { return [] }
            if let volume = signal.changed["Volume"]?.uint16 { transport.volume = volume }
            if let delay = signal.changed["Delay"]?.uint16 { transport.delay = delay }
            if let state = signal.changed["State"]?.string { transport.state = state }
            transports[path] = transport
            return [.transportChanged(transport)]
        default:
            return []
        }
    }

    func device(id: String) -> BluetoothDevice? { devices.values.first { $0.id == id } }
    func transport(of device: DBusObjectPath) -> Transport? { transports.values.first { $0.device == device } }
    /// The adapter to discover and register on: a powered one if there is one.
    var preferredAdapter: Adapter? { adapters.values.sorted { $0.path.rawValue < $1.path.rawValue }.first { $0.powered } ?? adapters.values.min { $0.path.rawValue < $1.path.rawValue } }
}
