import MediaRouteIPC
import MediaRouteWire

/// The open route pickers and the list they show: every driver's devices, grouped by display
/// name across protocols, each with its preferred protocol. Changes reach pickers coalesced.
final class PickerBoard {
    private var watchers: [Int: @Sendable ([PickerEntry]) -> Void] = [:]
    private var nextID = 1
    /// Set while a publication is scheduled: changes until then go out as one list.
    var publication: EventLoop.TimerHandle?
    /// When the list last went out: a change after a quiet spell goes out at once.
    var lastPublished: ContinuousClock.Instant?

    /// Pickers hear of changes at most once per this; a change after a quiet spell at once, the
    /// changes that follow it within the window as one list at its end.
    static let coalescing: Duration = .milliseconds(10)

    var isEmpty: Bool { watchers.isEmpty }

    func open(_ onChange: @escaping @Sendable ([PickerEntry]) -> Void) -> Int {
        defer { nextID += 1 }
        watchers[nextID] = onChange
        return nextID
    }

    /// True if it was open.
    func close(_ id: Int) -> Bool { watchers.removeValue(forKey: id) != nil }

    func closeAll() { watchers.removeAll() }

    func tell(_ entries: [PickerEntry]) {
        for watcher in watchers.values { watcher(entries) }
    }

    /// The list: devices of the same name through several drivers are one entry; the preferred
    /// protocol is the operator's choice where it is available, else the first in manifest order.
    static func entries(of records: [DriverRecord], preferences: [String: String]) -> [PickerEntry] {
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
        return order.compactMap { key in
            guard let available = routes[key], let first = available.first, let name = names[key] else { return nil }
            let preferred = preferences[key].flatMap { choice in available.first { $0.protocolID == choice }?.protocolID }
            return PickerEntry(name: name, routes: available, preferredProtocol: preferred ?? first.protocolID)
        }
    }
}
