import Foundation
import MediaDevice
import UPnP

/// The UPnP/DLNA driver: MediaRenderers on the LAN (TVs, network speakers) as routes. Finds them
/// with SSDP (searching while the picker is open, and listening to their announcements all the
/// time), controls them with SOAP, follows them through GENA events, and serves them what they
/// cannot fetch themselves (the controller's files, apps' live audio) over HTTP.
@main
final class DLNADriver: MediaDeviceExtension, RealtimeSampleHandling {
    static let protocolID = "org.mediaroute.dlna"
    var protocolType: UTType { UTType(exportedAs: Self.protocolID) }
    /// Each renderer is its own route: several can play at once.
    var supportsSimultaneousSessions: Bool { true }
    lazy var routingManager: MediaDeviceRoutingManager = .routingManager(for: self)

    let client = HTTPClient()
    let catalog: RendererCatalog
    var ssdp: SSDPDiscovery?
    var searching: Task<Void, Never>?
    /// Activated renderers by session id.
    var active: [String: ActiveRenderer] = [:]
    /// Our HTTP side, one per local address that reaches a renderer.
    var endpoints: [String: LocalEndpoint] = [:]
    /// How often `M-SEARCH` goes out while the picker is open.
    static let searchInterval: Duration = .seconds(3)
    /// Searches a renderer may leave unanswered (UDP loses some) before it counts as gone.
    static let unansweredSearches = 3

    init() {
        catalog = RendererCatalog(client: client)
        catalog.follow(.init(routing: routingManager, found: { [weak self] renderer in self?.found(renderer) },
                             lost: { [weak self] renderer, why in self?.lost(renderer, why: why) }))
    }

    // MARK: Discovery

    func startDeviceDiscovery() {
        guard searching == nil else { return }
        catalog.startListing()
        let ssdp = listening()
        // The first search goes out now on the interfaces known; the task looks for new ones.
        var sent = ssdp.searchKnown(for: UPnP.mediaRendererTypes)
        searching = Task {
            var rounds: [ContinuousClock.Instant] = []
            var hadInterfaces = true
            while !Task.isCancelled {
                rounds.append(.now)
                let interfaces = await ssdp.search(for: UPnP.mediaRendererTypes, sent: sent)
                sent = []
                // Said once when the last interface goes (searching goes on: it may come back).
                if interfaces.isEmpty, hadInterfaces {
                    routingManager.discoveryFailed(MediaDeviceError(.discoveryFailed, "no network interface that can multicast is up: renderers cannot be searched for"))
                }
                hadInterfaces = !interfaces.isEmpty
                // Three searches unanswered (and the time to answer the last): gone.
                if rounds.count > Self.unansweredSearches { catalog.expireSilent(since: rounds.removeFirst(), keeping: Set(active.values.map(\.renderer.description.udn))) }
                try? await Task.sleep(for: Self.searchInterval)
            }
        }
    }

    func stopDeviceDiscovery() {
        searching?.cancel()
        searching = nil
        catalog.stopListing()
    }

    /// SSDP, started once and kept: announcements (a renderer's byebye, its return after a
    /// reboot) matter while routes are active too, not only while the picker is open.
    private func listening() -> SSDPDiscovery {
        if let ssdp { return ssdp }
        let ssdp = SSDPDiscovery(handler: { [catalog] announcement in catalog.heard(announcement) })
        self.ssdp = ssdp
        Task {
            for await line in ssdp.logLines { log(line) }
        }
        Task {
            // Announcements' max-age runs out without any message: look each second.
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                catalog.expire()
            }
        }
        return ssdp
    }

    /// After the system heard of `renderer` (the catalog reports it from the event loop).
    private func found(_ renderer: KnownRenderer) {
        // Found at another place (a new address after a power cut): routes still on the old one
        // control nothing and hear nothing; they end, and the renderer stays listed at the new one.
        // Unless the old place still answers: a renderer on two networks at once (wired and
        // Wi-Fi) announces both, and its route stays where it is.
        let stale = active.values.filter { $0.device.id == renderer.device.id && $0.renderer.description.location != renderer.description.location }
        for route in stale {
            Task {
                guard await !route.answers() else {
                    return log("\(renderer.name) is also at \(renderer.description.location.host ?? "another address"); its route stays at \(route.renderer.description.location.host ?? "its first")")
                }
                route.end("\(renderer.name) moved to \(renderer.description.location.host ?? "another address"): activate it again there")
            }
        }
    }

    private func lost(_ renderer: KnownRenderer, why: String) {
        // Routes first, with the reason (logged there): a device lost while in use would end
        // them with a generic one.
        let users = active.values.filter { $0.device.id == renderer.device.id }
        if users.isEmpty { log(why) }
        for active in users { active.end(why) }
        catalog.unreport(renderer.description.udn, device: renderer.device)
    }
}
