import AvahiDiscovery
import Foundation

/// Browses DNS-SD through the Avahi daemon on the system bus, as the Avahi-based drivers do
/// (libavahi-client, on `DBUS_SYSTEM_BUS_ADDRESS` or the default system bus): the real test of
/// "can a driver browse", and what the network announces, for the device check.
enum AvahiProbe {
    enum Outcome: Sendable {
        /// Browsing ran: every service resolved, by type.
        case browsed([String: [ResolvedService]])
        /// The daemon or its bus cannot be reached, or browsing failed: the sentence says which.
        case unavailable(String)
    }

    /// The DNS-SD types our drivers browse, and the driver of each.
    static let serviceTypes = ["_mediaroute._tcp": "org.mediaroute.reference", "_raop._tcp": "org.mediaroute.airplay"]

    private enum Event: Sendable {
        case connection(AvahiConnection.State)
        case browse(String, ServiceBrowse.Event)
        case timeUp
    }

    /// Browses every type until each has listed what Avahi knows (`allForNow`), and then for
    /// `linger` more (a device across the network is resolved later than the cache is listed),
    /// within `bound` in all.
    static func browse(linger: Duration, bound: Duration) async -> Outcome {
        let (events, continuation) = AsyncStream<Event>.makeStream()
        let connection: AvahiConnection
        do {
            connection = try AvahiConnection { continuation.yield(.connection($0)) }
        } catch {
            return .unavailable("cannot start an Avahi client: \(error)")
        }
        defer { connection.close() }
        let timer = Task {
            try? await Task.sleep(for: bound)
            continuation.yield(.timeUp)
        }
        var lingering: Task<Void, Never>?
        defer {
            timer.cancel()
            lingering?.cancel()
        }
        var browses: [ServiceBrowse] = []
        defer { browses.forEach { $0.cancel() } }
        var found: [String: [ResolvedService.Instance: ResolvedService]] = [:]
        var listed: Set<String> = []
        var last: AvahiConnection.State?
        for await event in events {
            switch event {
            case .connection(let state):
                last = state
                if case .unavailable(let why) = state { return .unavailable(why) }
                if browses.isEmpty {
                    browses = serviceTypes.keys.sorted().map { type in
                        ServiceBrowse(type: type, on: connection) { continuation.yield(.browse(type, $0)) }
                    }
                }
            case .browse(let type, .found(let service)): found[type, default: [:]][service.instance] = service
            case .browse(let type, .lost(let instance)): found[type]?[instance] = nil
            case .browse(_, .failed(let why)): return .unavailable(why)
            case .browse(let type, .allForNow):
                listed.insert(type)
                if listed.count == serviceTypes.count, lingering == nil {
                    lingering = Task {
                        try? await Task.sleep(for: linger)
                        continuation.finish()
                    }
                }
            case .timeUp:
                guard last == .running else { return .unavailable("the Avahi daemon did not answer within \(bound)") }
                guard listed.count == serviceTypes.count else { return .unavailable("browsing through Avahi did not list its cache within \(bound)") }
                continuation.finish()
            }
        }
        return .browsed(found.mapValues { Array($0.values) })
    }
}
