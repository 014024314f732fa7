import AvahiDiscovery
import MediaDevice
import ReferenceProtocol

/// The receivers Avahi announces, by device id: one device however many interfaces it is seen on.
@MainActor
final class ReceiverCatalog {
    struct Entry {
        var device: MediaOutputDevice
        var announcement: ReceiverAnnouncement
        var instances: Set<ResolvedService.Instance>
    }

    private(set) var entries: [String: Entry] = [:]

    /// A resolved announcement; returns the device if it is new or changed, nil otherwise.
    /// Throws (with the reason) for an announcement that breaks PROTOCOL.md §1.
    func found(_ service: ResolvedService) throws(ReferenceProtocolError) -> MediaOutputDevice? {
        let announcement = try ReceiverAnnouncement(txt: service.txt)
        guard let device = MediaOutputDevice(id: announcement.id, displayName: service.name, capabilities: announcement.capabilities,
                                             deviceType: announcement.deviceType, volumeControl: announcement.volumeControl, canMute: announcement.canMute,
                                             requiredNetworkEndpoints: [.init(host: service.address, port: service.port)]) else {
            throw ReferenceProtocolError(.badRequest, "the announcement of \"\(service.name)\" does not make a device (its name or endpoint is unusable)")
        }
        // An instance that now names another device first leaves its old one.
        for (id, entry) in entries where id != device.id && entry.instances.contains(service.instance) { _ = lost(service.instance) }
        var entry = entries[device.id] ?? Entry(device: device, announcement: announcement, instances: [])
        entry.instances.insert(service.instance)
        let changed = entries[device.id] == nil || entry.device != device
        entry.device = device
        entry.announcement = announcement
        entries[device.id] = entry
        return changed ? device : nil
    }

    /// An instance went away; returns the device if that was its last instance.
    func lost(_ instance: ResolvedService.Instance) -> MediaOutputDevice? {
        guard let (id, found) = entries.first(where: { $0.value.instances.contains(instance) }) else { return nil }
        var entry = found
        entry.instances.remove(instance)
        if entry.instances.isEmpty {
            entries[id] = nil
            return entry.device
        }
        entries[id] = entry
        return nil
    }

    func entry(_ id: String) -> Entry? { entries[id] }

    func forget(_ id: String) { entries[id] = nil }
}
