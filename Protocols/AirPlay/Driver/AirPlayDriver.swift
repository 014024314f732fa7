import AvahiDiscovery
import Foundation
import MediaDevice

/// The AirPlay 1 (RAOP) driver: receivers announced as `_raop._tcp` (AirPort Express, Apple TVs,
/// shairport-sync speakers) as routes, streamed to as Apple Lossless over RTP, encrypted when
/// the receiver requires it, with its password asked once and remembered, and its volume kept
/// across activations.
@main
final class AirPlayDriver: MediaDeviceExtension, RealtimeSampleHandling {
    static let protocolID = "org.mediaroute.airplay"
    static let serviceType = "_raop._tcp"
    var protocolType: UTType { UTType(exportedAs: Self.protocolID) }
    /// Each receiver is its own route: several can play at once.
    var supportsSimultaneousSessions: Bool { true }
    lazy var routingManager: MediaDeviceRoutingManager = .routingManager(for: self)

    lazy var memory = ReceiverMemory(stateDirectory: routingManager.stateDirectory)
    lazy var browser = ServiceBrowser(type: Self.serviceType, onEvent: { [unowned self] in self.browsed($0) }, onUnavailable: { [unowned self] why in
        self.routingManager.discoveryFailed(MediaDeviceError(.discoveryFailed, "cannot discover AirPlay receivers: \(why)"))
    })
    /// Receivers announced now, by device id, and which announcement is whose.
    var receivers: [String: RAOPAnnouncement] = [:]
    private var instances: [ResolvedService.Instance: String] = [:]
    /// Announcements already logged as refused, so each is said once.
    private var refused: Set<String> = []
    /// A picker is open.
    private var isListing = false
    /// Activated receivers by session id.
    var active: [String: ActiveReceiver] = [:]
    /// Receivers listed by an earlier browse and not seen again yet in this one.
    private var unconfirmed: Set<String> = []
    /// Receivers in use whose announcement went, by device id: their routes end unless it comes
    /// back soon (the local Avahi daemon restarting withdraws everything for a moment).
    private var departures: [String: Task<Void, Never>] = [:]
    static let departureGrace: Duration = .seconds(3)
    /// Activations under way, by session id; a deactivation takes its session out.
    var activating: Set<String> = []
    /// Passwords asked of the person, waiting for `connectUsingPairingCode`, by session id.
    var pendingPasswords: [String: CheckedContinuation<String?, Never>] = [:]

    init() {}

    // MARK: Discovery

    func startDeviceDiscovery() {
        isListing = true
        browseIfNeeded()
    }

    func browseIfNeeded() {
        // What an earlier browse listed must be seen again in this one, or it left unseen.
        if !browser.isBrowsing { unconfirmed = Set(receivers.keys) }
        do {
            try browser.start()
        } catch {
            routingManager.discoveryFailed(MediaDeviceError(.discoveryFailed, "cannot use Avahi: \(error)"))
        }
    }

    /// Browsing goes on while a receiver is in use: its announcement withdrawn is how the driver
    /// learns that it went away (switched off, unplugged) while nothing else would say so.
    func stopDeviceDiscovery() {
        isListing = false
        stopBrowsingIfUnused()
    }

    func stopBrowsingIfUnused() {
        guard !isListing, active.isEmpty else { return }
        browser.stop()
    }

    private func browsed(_ event: ServiceBrowse.Event) {
        switch event {
        case .found(let service):
            let receiver: RAOPAnnouncement
            do {
                receiver = try RAOPAnnouncement(service)
            } catch {
                if refused.insert(service.name).inserted { log("not listing \"\(service.name)\" at \(service.address):\(service.port): \(error.message)") }
                return
            }
            guard let device = receiver.device else {
                return log("not listing \"\(service.name)\": its name cannot be shown")
            }
            instances[service.instance] = device.id
            unconfirmed.remove(device.id)
            departures.removeValue(forKey: device.id)?.cancel()
            guard receivers[device.id] != receiver else { return }
            receivers[device.id] = receiver
            routingManager.foundDevice(device)
        case .lost(let instance):
            guard let id = instances.removeValue(forKey: instance), !instances.values.contains(id) else { return }
            guard active.values.contains(where: { $0.device.id == id }) else { return forget(id) }
            departures[id] = Task {
                try? await Task.sleep(for: Self.departureGrace)
                guard !Task.isCancelled, departures.removeValue(forKey: id) != nil, !instances.values.contains(id) else { return }
                forget(id)
            }
        case .allForNow:
            for id in unconfirmed where !active.values.contains(where: { $0.device.id == id }) { forget(id) }
            unconfirmed.removeAll()
        case .failed(let why):
            routingManager.discoveryFailed(MediaDeviceError(.discoveryFailed, why))
        }
    }

    /// A receiver gone from the network: its routes end first, with the reason (a device lost
    /// while in use would end them with a generic one), then it leaves the picker.
    private func forget(_ id: String) {
        guard let device = receivers.removeValue(forKey: id)?.device else { return }
        for receiver in active.values where receiver.device.id == id {
            self.receiver(receiver, failed: "\(device.displayName) left the network (its AirPlay announcement was withdrawn)")
        }
        routingManager.lostDevice(device)
    }
}
