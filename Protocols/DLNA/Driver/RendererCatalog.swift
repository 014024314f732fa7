import Foundation
import MediaDevice
import UPnP

/// The renderers on the network, kept from SSDP: found when they announce themselves or answer a
/// search, renewed by each announcement, lost on `byebye` or when their `max-age` passes.
@MainActor
final class RendererCatalog {
    private(set) var renderers: [String: KnownRenderer] = [:]  // by UDN
    /// Descriptions being fetched, by location, so a burst of announcements fetches once.
    private var fetching: Set<URL> = []
    /// Locations whose description was broken, and when to look again (a renderer may be fixed
    /// or finish booting), so a broken one is logged once, not at every announcement.
    private var broken: [URL: ContinuousClock.Instant] = [:]
    private let client: HTTPClient
    static let retryBroken: Duration = .seconds(30)
    /// Whether new renderers are wanted (a picker is open). Otherwise only the ones known are
    /// followed; a new one is found by the next picker's search, within milliseconds.
    var isListing = false

    var found: (KnownRenderer) -> Void = { _ in }
    var lost: (KnownRenderer, String) -> Void = { _, _ in }

    init(client: HTTPClient) { self.client = client }

    func renderer(_ deviceID: String) -> KnownRenderer? { renderers.values.first { $0.device.id == deviceID } }

    func heard(_ announcement: SSDPAnnouncement) {
        switch announcement.kind {
        case .byebye:
            guard let renderer = renderers.removeValue(forKey: announcement.udn) else { return }
            lost(renderer, "\(renderer.name) said goodbye (ssdp:byebye)")
        case .alive(let location, let maxAge):
            if var known = renderers[announcement.udn] {
                known.expires = max(known.expires, .now + .seconds(maxAge))
                known.heard = .now
                known.address = announcement.sender
                renderers[announcement.udn] = known
                // A renderer that moved (new address or port after a reboot) is read again, picker
                // open or not: it is one we follow, and its routes need to hear of it.
                guard known.description.location != location else { return }
            }
            guard isListing || renderers[announcement.udn] != nil, Self.mayBeRenderer(announcement.target), !fetching.contains(location) else { return }
            if let retry = broken[location], retry > .now { return }
            fetching.insert(location)
            Task { await self.fetch(location, announcement: announcement, maxAge: maxAge) }
        }
    }

    /// Announcements worth reading a description for: a device announces itself once per type,
    /// and an embedded renderer (many TVs) under its own UDN, so the renderer type is enough.
    static func mayBeRenderer(_ target: String) -> Bool { target.hasPrefix("urn:schemas-upnp-org:device:MediaRenderer:") }

    private func fetch(_ location: URL, announcement: SSDPAnnouncement, maxAge: Int) async {
        defer { fetching.remove(location) }
        do {
            let renderer = try await KnownRenderer.fetch(location, from: announcement.sender, maxAge: maxAge, client: client)
            broken[location] = nil
            guard isListing || renderers[renderer.description.udn] != nil else { return }
            let previous = renderers[renderer.description.udn]
            renderers[renderer.description.udn] = renderer
            if previous == nil {
                log("found \(renderer.name) (\(renderer.description.modelName ?? "unknown model")) at \(location.absoluteString)")
            } else if let previous, previous.description.location != location {
                log("\(renderer.name) moved from \(previous.description.location.absoluteString) to \(location.absoluteString)")
            }
            found(renderer)
        } catch {
            broken[location] = .now + Self.retryBroken
            log("ignoring the device at \(location.absoluteString) (from \(announcement.sender)): \(error)")
        }
    }

    /// Drops renderers whose announcements ran out, saying so.
    func expire(now: ContinuousClock.Instant = .now) {
        for (udn, renderer) in renderers where renderer.expires <= now {
            renderers[udn] = nil
            lost(renderer, "\(renderer.name) stopped announcing itself (its SSDP max-age ran out)")
        }
    }

    /// While searching: renderers that answered none of the searches since `since` are gone,
    /// though their max-age (often 30 minutes) has not run out: a renderer unplugged without a
    /// byebye should not stay in the picker for half an hour. Renderers in use are kept: their
    /// own answers (or silence) to our actions say whether they are there.
    func expireSilent(since: ContinuousClock.Instant, keeping inUse: Set<String>) {
        for (udn, renderer) in renderers where renderer.heard < since && !inUse.contains(udn) {
            renderers[udn] = nil
            lost(renderer, "\(renderer.name) no longer answers searches")
        }
    }

    /// Forgets a renderer that stopped answering (so the next announcement finds it afresh).
    func forget(_ udn: String) { renderers[udn] = nil }
}
