import Foundation
import MediaDevice
import NIOCore
import NIOPosix
import Synchronization
import UPnP

/// The renderers on the network, kept from SSDP: found when they announce themselves or answer a
/// search, renewed by each announcement, lost on `byebye` or when their `max-age` passes.
///
/// Announcements are taken on the event loop that read them, and a renderer's description and
/// formats are fetched and the renderer reported to the system from that loop too: a hop to the
/// main actor on the way cost 150 µs each, more than the renderer took to answer. What needs the
/// driver's routes (ending those a renderer left) follows on the main actor.
final class RendererCatalog: Sendable {
    private struct State {
        var renderers: [String: KnownRenderer] = [:]  // by UDN
        /// Descriptions being fetched, by location, so a burst of announcements fetches once;
        /// the UDN announced, and whether it said goodbye since (the fetch then lists nothing).
        var fetching: [URL: (udn: String, gone: Bool)] = [:]
        /// Locations whose description or formats could not be read, when to look again, and how
        /// many reads failed in a row: a renderer that just booted announces itself before it
        /// serves everything (refused connections, HTTP 404 and 500 for a few milliseconds), so the
        /// next try comes soon, then less and less often; a broken one is logged once.
        var broken: [URL: (retry: ContinuousClock.Instant, failures: Int)] = [:]
        /// Whether new renderers are wanted (a picker is open). Otherwise only the ones known are
        /// followed; a new one is found by the next picker's search, within milliseconds.
        var isListing = false
        /// Devices reported to the system, by id.
        var reported: Set<String> = []
        var handlers = Handlers()
    }

    /// Who hears of changes: the system, and the driver on the main actor once the system did.
    struct Handlers: Sendable {
        var routing: MediaDeviceRoutingManager?
        /// A renderer was reported found (new, or at a new place).
        var found: @MainActor @Sendable (KnownRenderer) -> Void = { _ in }
        /// A renderer is gone, for the reason given: its routes end, then `unreport` tells the system.
        var lost: @MainActor @Sendable (KnownRenderer, String) -> Void = { _, _ in }
    }

    private let state = Mutex(State())
    private let client: HTTPClient
    /// The wait after a first failed read, doubled at each further one up to `retryBroken`.
    static let retryFirst: Duration = .milliseconds(500)
    static let retryBroken: Duration = .seconds(30)

    init(client: HTTPClient) { self.client = client }

    func follow(_ handlers: Handlers) { state.withLock { $0.handlers = handlers } }

    var renderers: [KnownRenderer] { state.withLock { Array($0.renderers.values) } }

    func renderer(_ deviceID: String) -> KnownRenderer? { state.withLock { $0.renderers.values.first { $0.device.id == deviceID } } }

    /// A picker opened: new renderers are wanted, and the known ones are reported again.
    func startListing() {
        state.withLock { state in
            state.isListing = true
            for renderer in state.renderers.values {
                state.reported.insert(renderer.device.id)
                state.handlers.routing?.foundDevice(renderer.device)
            }
        }
    }

    /// The picker closed. Renderers known stay (an activation right after it closed needs them)
    /// until their byebye or max-age; new ones are not looked for until a picker opens again.
    func stopListing() { state.withLock { $0.isListing = false } }

    /// Takes an announcement, on the event loop that read it.
    func heard(_ announcement: SSDPAnnouncement) {
        switch announcement.kind {
        case .byebye:
            let (renderer, lost) = state.withLock { state in
                for (location, fetch) in state.fetching where fetch.udn == announcement.udn { state.fetching[location]?.gone = true }
                return (state.renderers.removeValue(forKey: announcement.udn), state.handlers.lost)
            }
            guard let renderer else { return }
            Task { @MainActor in lost(renderer, "\(renderer.name) said goodbye (ssdp:byebye)") }
        case .alive(let location, let maxAge):
            let fetch = state.withLock { state -> Bool in
                // Alive again after a byebye while its description was being read (a restart says
                // both): that reading counts again.
                if state.fetching[location]?.udn == announcement.udn { state.fetching[location]?.gone = false }
                if var known = state.renderers[announcement.udn] {
                    known.expires = max(known.expires, .now + .seconds(maxAge))
                    known.heard = .now
                    // A new address only with the description read from it (below), not before.
                    if known.description.location == location { known.address = announcement.sender }
                    state.renderers[announcement.udn] = known
                    // A renderer that moved (new address or port after a reboot) is read again,
                    // picker open or not: it is one we follow, and its routes need to hear of it.
                    guard known.description.location != location else { return false }
                }
                guard state.isListing || state.renderers[announcement.udn] != nil, Self.mayBeRenderer(announcement.target),
                      state.fetching[location] == nil else { return false }
                if let broken = state.broken[location], broken.retry > .now { return false }
                state.fetching[location] = (announcement.udn, false)
                return true
            }
            guard fetch else { return }
            let loop = MultiThreadedEventLoopGroup.currentEventLoop ?? client.nextLoop()
            KnownRenderer.read(location, from: announcement.sender, maxAge: maxAge, client: client, on: loop) { result in
                self.fetched(result, from: location, sender: announcement.sender)
            }
        }
    }

    /// Announcements worth reading a description for: a device announces itself once per type,
    /// and an embedded renderer (many TVs) under its own UDN, so the renderer type is enough.
    static func mayBeRenderer(_ target: String) -> Bool { target.hasPrefix("urn:schemas-upnp-org:device:MediaRenderer:") }

    /// A fetch ended, on its event loop: the renderer is reported there and then, unless it said
    /// goodbye meanwhile or, new, the picker closed.
    private func fetched(_ result: Result<KnownRenderer, any Error>, from location: URL, sender: String) {
        let renderer: KnownRenderer
        do {
            renderer = try result.get()
        } catch {
            let failures = state.withLock { state in
                state.fetching[location] = nil
                let failures = (state.broken[location]?.failures ?? 0) + 1
                state.broken[location] = (.now + Self.retryDelay(after: failures), failures)
                return failures
            }
            if failures == 1 { log("ignoring the device at \(location.absoluteString) (from \(sender)) for now: \(Self.reason(error, location))") }
            return
        }
        let udn = renderer.description.udn
        let outcome = state.withLock { state -> (previous: KnownRenderer?, found: Handlers)? in
            let fetch = state.fetching.removeValue(forKey: location)
            state.broken[location] = nil
            guard fetch?.gone != true, state.isListing || state.renderers[udn] != nil else { return nil }
            let previous = state.renderers.updateValue(renderer, forKey: udn)
            state.reported.insert(renderer.device.id)
            // Under the lock: a byebye or another fetch of it reports after this one.
            state.handlers.routing?.foundDevice(renderer.device)
            return (previous, state.handlers)
        }
        guard let outcome else { return }
        var note: String?
        if outcome.previous == nil {
            note = "found \(renderer.name) (\(renderer.description.modelName ?? "unknown model")) at \(location.absoluteString)"
        } else if let previous = outcome.previous, previous.description.location != location {
            note = "\(renderer.name) moved from \(previous.description.location.absoluteString) to \(location.absoluteString)"
        }
        renderer.sinkFormats.load()
        let found = outcome.found.found
        Task { @MainActor in
            // Logged here, behind the report: the main thread writes the report out before it
            // runs the main actor's jobs, and mediarouted reads whichever comes first.
            if let note { log(note) }
            found(renderer)
        }
    }

    static func retryDelay(after failures: Int) -> Duration {
        var delay = retryFirst
        for _ in 1..<max(failures, 1) where delay < retryBroken { delay *= 2 }
        return min(delay, retryBroken)
    }

    private static func reason(_ error: any Error, _ location: URL) -> String {
        if let error = error as? UPnPError { return "\(error)" }
        return "\(UPnPError(.unreachable, "cannot read the renderer at \(location.absoluteString): \(error)"))"
    }

    /// Drops renderers whose announcements ran out, saying so.
    @MainActor
    func expire(now: ContinuousClock.Instant = .now) {
        let (gone, lost) = state.withLock { state in
            let gone = state.renderers.filter { $0.value.expires <= now }
            for udn in gone.keys { state.renderers[udn] = nil }
            return (gone.values, state.handlers.lost)
        }
        for renderer in gone { lost(renderer, "\(renderer.name) stopped announcing itself (its SSDP max-age ran out)") }
    }

    /// While searching: renderers that answered none of the searches since `since` are gone,
    /// though their max-age (often 30 minutes) has not run out: a renderer unplugged without a
    /// byebye should not stay in the picker for half an hour. Renderers in use are kept: their
    /// own answers (or silence) to our actions say whether they are there.
    @MainActor
    func expireSilent(since: ContinuousClock.Instant, keeping inUse: Set<String>) {
        let (gone, lost) = state.withLock { state in
            let gone = state.renderers.filter { $0.value.heard < since && !inUse.contains($0.key) }
            for udn in gone.keys { state.renderers[udn] = nil }
            return (gone.values, state.handlers.lost)
        }
        for renderer in gone { lost(renderer, "\(renderer.name) no longer answers searches") }
    }

    /// Forgets a renderer that stopped answering (so the next announcement finds it afresh), and
    /// tells the system it is gone.
    func forget(_ udn: String, device: MediaOutputDevice) {
        state.withLock { $0.renderers[udn] = nil }
        unreport(udn, device: device)
    }

    /// Tells the system a renderer dropped from the catalog is gone, once its routes ended (they
    /// end with the reason; a device lost while in use would end them with a generic one).
    /// Nothing is said of one found again since: its return was reported already.
    func unreport(_ udn: String, device: MediaOutputDevice) {
        state.withLock { state in
            guard state.renderers[udn] == nil, state.reported.remove(device.id) != nil else { return }
            state.handlers.routing?.lostDevice(device)
        }
    }
}
