import Foundation
import MediaRouteIPC
import MediaRouteWire

/// The devices the supervisor remembers (`RememberedDevice`), in `devices.json` of the state
/// directory: written whole to a temporary file, synced and renamed into place (as `state.json`
/// is), so `kill -9` leaves the old file or the new one; at most `limit` devices.
final class RememberedDevices {
    static let limit = 512
    let path: String
    private var entries: [RememberedDevice.Key: RememberedDevice] = [:]
    /// Volume reports can come many a second (a knob turned): the file is written at most once a second.
    let pacing = WritePacing(interval: .seconds(1))

    init(stateDirectory: String) { path = (stateDirectory as NSString).appendingPathComponent("devices.json") }

    /// Reads the file; a damaged one is named and set aside (nothing in it is worth refusing to start over).
    func load() -> String? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        do {
            let list = try WireDecoder.decode([RememberedDevice].self, from: try JSONReader.parse(Array(data)))
            entries = Dictionary(list.map { ($0.key, $0) }, uniquingKeysWith: { $1 })
            return nil
        } catch {
            try? FileManager.default.removeItem(atPath: path + ".damaged")
            try? FileManager.default.moveItem(atPath: path, toPath: path + ".damaged")
            return "the remembered devices \(path) could not be read (\(error)); it was moved to \(path).damaged and devices start afresh"
        }
    }

    func save() throws {
        let list = entries.values.sorted { ($0.protocol, $0.id) < ($1.protocol, $1.id) }
        try JSONWriter.write(WireEncoder.encode(list), atomicallyTo: path)
    }

    subscript(protocolID: String, id: String) -> RememberedDevice? { entries[.init(protocolID: protocolID, id: id)] }

    /// The device as the picker and routes show it: its nickname in place of its own name. The own
    /// name of a remembered device is kept up to date; true in `changed` when that needs saving.
    func shown(_ device: MediaOutputDevice, of protocolID: String) -> (device: MediaOutputDevice, changed: Bool) {
        let key = RememberedDevice.Key(protocolID: protocolID, id: device.id)
        guard var entry = entries[key] else { return (device, false) }
        let changed = entry.ownName != device.displayName
        if changed {
            entry.ownName = device.displayName
            entries[key] = entry
        }
        return (entry.nickname.flatMap { device.named($0) } ?? device, changed)
    }

    /// Changes (or makes) the entry of a device; false when nothing changed. Entries left with
    /// nothing to remember are dropped, and the longest unused go past `limit`.
    @discardableResult
    func change(_ protocolID: String, _ device: MediaOutputDevice, ownName: String, _ body: (inout RememberedDevice) -> Void) -> Bool {
        let key = RememberedDevice.Key(protocolID: protocolID, id: device.id)
        let before = entries[key]
        var entry = before ?? RememberedDevice(protocol: protocolID, id: device.id, ownName: ownName, lastUsed: 0)
        body(&entry)
        entry.lastUsed = before?.lastUsed ?? 0
        guard entry != before, !(before == nil && entry.isEmpty) else { return false }
        entry.lastUsed = Date().timeIntervalSince1970
        entries[key] = entry.isEmpty ? nil : entry
        if entries.count > Self.limit, let oldest = entries.values.min(by: { $0.lastUsed < $1.lastUsed }) { entries[oldest.key] = nil }
        return true
    }
}

extension MediaOutputDevice {
    /// The same device under another name; nil if the name could not be shown (empty, too long, control characters).
    func named(_ name: String) -> MediaOutputDevice? {
        MediaOutputDevice(id: id, displayName: name, capabilities: capabilities, deviceType: deviceType, volumeControl: volumeControl,
                          canMute: canMute, requiredNetworkEndpoints: requiredNetworkEndpoints)
    }
}
