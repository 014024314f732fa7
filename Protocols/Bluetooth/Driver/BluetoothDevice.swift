import DBus
import MediaDevice

/// One `org.bluez.Device1` as BlueZ last described it: what the driver needs to list, pair and
/// connect it. Kept up to date from `PropertiesChanged`.
struct BluetoothDevice: Sendable, Equatable {
    let path: DBusObjectPath
    let adapter: DBusObjectPath
    var address: String
    var alias: String
    var icon: String?
    var deviceClass: UInt32?
    var uuids: [String]
    var paired: Bool
    var trusted: Bool
    var connected: Bool

    init?(path: DBusObjectPath, properties: [String: DBusValue]) {
        guard let address = properties["Address"]?.string, let adapter = properties["Adapter"]?.objectPath else { return nil }
        self.path = path
        self.adapter = adapter
        self.address = address
        alias = properties["Alias"]?.string ?? properties["Name"]?.string ?? address
        icon = properties["Icon"]?.string
        deviceClass = properties["Class"]?.uint32
        uuids = properties["UUIDs"]?.strings ?? []
        paired = properties["Paired"]?.bool ?? false
        trusted = properties["Trusted"]?.bool ?? false
        connected = properties["Connected"]?.bool ?? false
    }

    /// Applies a `PropertiesChanged` of `org.bluez.Device1`.
    mutating func apply(_ changed: [String: DBusValue]) {
        if let value = changed["Alias"]?.string { alias = value }
        if let value = changed["Icon"]?.string { icon = value }
        if let value = changed["Class"]?.uint32 { deviceClass = value }
        if let value = changed["UUIDs"]?.strings { uuids = value }
        if let value = changed["Paired"]?.bool { paired = value }
        if let value = changed["Trusted"]?.bool { trusted = value }
        if let value = changed["Connected"]?.bool { connected = value }
    }

    /// Only devices that take audio from us (an A2DP sink) are routes.
    var isAudioSink: Bool { uuids.contains { $0.lowercased() == BlueZ.audioSinkUUID } }

    /// Stable across discoveries, adapters and restarts: the device's own address.
    var id: String { Self.id(address: address) }
    static func id(address: String) -> String { "bluetooth:" + address.uppercased() }

    /// What the picker shows: BlueZ's `Icon` names the kind of device; the Class of Device's
    /// audio/video minor class (Assigned Numbers, "Class of Device") says it when there is no icon.
    var deviceType: MediaOutputDevice.DeviceType {
        switch icon {
        case "audio-headphones", "audio-headset": return .headphones
        case "audio-card", "audio-speakers": return .bluetoothSpeaker
        case "video-display": return .tv
        default: break
        }
        guard let deviceClass, (deviceClass >> 8) & 0x1f == 0x04 else { return .bluetoothSpeaker }
        switch (deviceClass >> 2) & 0x3f {
        case 0x01, 0x02, 0x06: return .headphones  // wearable headset, hands-free, headphones
        case 0x08: return .car                      // car audio
        case 0x09: return .setTopBox
        case 0x0e, 0x0f: return .tv                 // video monitor, video display and loudspeaker
        default: return .bluetoothSpeaker           // loudspeaker, portable and hi-fi audio, ...
        }
    }

    var mediaOutputDevice: MediaOutputDevice? {
        MediaOutputDevice(id: id, displayName: alias, capabilities: [.realtimeAudioStreaming, .urlPlayback], deviceType: deviceType,
                          volumeControl: .absolute, canMute: true)
    }
}
