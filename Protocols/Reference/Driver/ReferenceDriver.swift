import AvahiDiscovery
import Foundation
import MediaDevice
import MediaRouteIPC
import ReferenceProtocol

/// The driver of the MediaRoute reference protocol (Protocols/Reference/PROTOCOL.md): finds
/// receivers with Avahi, pairs with them, plays URLs on them, and carries their volume and data.
///
/// It is built only on the MediaDevice SDK and the Avahi wrapper: the model for a new driver.
@main
final class ReferenceDriver: MediaDeviceExtension, RealtimeSampleHandling {
    var protocolType: UTType { UTType(exportedAs: ReferenceProtocol.protocolID) }
    var supportsSimultaneousSessions: Bool { false }
    lazy var routingManager: MediaDeviceRoutingManager = .routingManager(for: self)

    private lazy var credentials = ControllerCredentials(stateDirectory: routingManager.stateDirectory)
    private let catalog = ReceiverCatalog()
    private lazy var browser = ServiceBrowser(type: ReferenceProtocol.serviceType, onEvent: { [unowned self] in self.browsed($0) }, onUnavailable: { [unowned self] why in
        self.routingManager.discoveryFailed(MediaDeviceError(.discoveryFailed, "cannot discover receivers: \(why)"))
    })
    /// Devices reported to the system and not lost since.
    private var reported: [String: MediaOutputDevice] = [:]
    /// Devices reported in an earlier discovery and not seen again yet in this one.
    private var unconfirmed: Set<String> = []
    /// One link per activation (session id), and the playback of the session on it.
    private var links: [String: ReceiverLink] = [:]
    private var playbacks: [String: ReferencePlayback] = [:]
    /// The encoder thread of each open sample stream, by stream id, with its session (no sender yet while it starts).
    private var senders: [String: (session: MediaOutputSession, sender: SampleSender?)] = [:]

    init() {}

    // MARK: Discovery

    func startDeviceDiscovery() {
        if !browser.isBrowsing { unconfirmed = Set(reported.keys) }
        do {
            try browser.start()
        } catch {
            routingManager.discoveryFailed(MediaDeviceError(.discoveryFailed, "cannot use Avahi: \(error)"))
        }
    }

    func stopDeviceDiscovery() { browser.stop() }

    private func browsed(_ event: ServiceBrowse.Event) {
        switch event {
        case .found(let service):
            do {
                let changed = try catalog.found(service)
                if let id = service.txt["id"] { unconfirmed.remove(id) }
                guard let device = changed else { return }
                reported[device.id] = device
                routingManager.foundDevice(device)
            } catch {
                FileHandle.standardError.write(Data("ignoring \"\(service.name)\" at \(service.address):\(service.port): \(error.message)\n".utf8))
            }
        case .lost(let instance):
            guard let device = catalog.lost(instance) else { return }
            // A receiver still connected is not lost: the daemon that announced it may have restarted.
            guard !links.values.contains(where: { $0.device.id == device.id }) else { return }
            reported[device.id] = nil
            routingManager.lostDevice(device)
        case .allForNow:
            // What an earlier discovery reported and this one did not find has gone while nobody looked.
            for id in unconfirmed where !links.values.contains(where: { $0.device.id == id }) {
                catalog.forget(id)
                if let device = reported.removeValue(forKey: id) { routingManager.lostDevice(device) }
            }
            unconfirmed.removeAll()
        case .failed(let why):
            routingManager.discoveryFailed(MediaDeviceError(.discoveryFailed, why))
        }
    }

    // MARK: Activation and pairing

    func activateDevice(_ device: MediaOutputDevice, session: MediaOutputSession, for deviceFeatures: MediaOutputDevice.Capabilities) {
        guard let entry = catalog.entry(device.id), let endpoint = entry.device.requiredNetworkEndpoints.first else {
            routingManager.failedToActivateDevice(device, session: session,
                                                  error: MediaDeviceError(.connectionFailed, "\(device.displayName) is no longer announced on the network"))
            return
        }
        let link = ReceiverLink(device: entry.device, announcement: entry.announcement, endpoint: endpoint, credentials: credentials) { [weak self] event in
            self?.linkEvent(event, session: session)
        }
        links[session.id] = link
        Task {
            do {
                if try await link.open() {
                    try await self.finishActivation(link, session)
                } else {
                    let method = try await link.beginPairing()
                    routingManager.requestPairingCode(for: device, session: session, reason: "Enter the code \(device.displayName) shows.",
                                                      authorizationMethod: method)
                }
            } catch {
                self.failActivation(device, session, error)
            }
        }
    }

    func connectUsingPairingCode(_ pairingCode: String?, to device: MediaOutputDevice, session: MediaOutputSession) {
        guard let link = links[session.id] else {
            routingManager.failedToActivateDevice(device, session: session, error: MediaDeviceError(.connectionFailed, "\(device.displayName) is not connecting any more"))
            return
        }
        guard let pairingCode else {
            failActivation(device, session, MediaDeviceError(.authorizationFailed, "pairing with \(device.displayName) was cancelled"))
            return
        }
        Task {
            do {
                try await link.finishPairing(pairingCode)
                try await self.finishActivation(link, session)
            } catch {
                self.failActivation(device, session, error)
            }
        }
    }

    /// Authorized: read the receiver's volume, and the route is active.
    private func finishActivation(_ link: ReceiverLink, _ session: MediaOutputSession) async throws(MediaDeviceError) {
        let status = try await link.request(ReferenceRequest.Status())
        link.updateVolume(ReferenceRequest.Volume(volume: status.volume, muted: status.muted))
        routingManager.activatedDevice(link.device, session: session)
    }

    private func failActivation(_ device: MediaOutputDevice, _ session: MediaOutputSession, _ error: any Error) {
        links.removeValue(forKey: session.id)?.close()
        routingManager.failedToActivateDevice(device, session: session, error: error)
    }

    func deactivateDevice(_ device: MediaOutputDevice, session: MediaOutputSession) {
        links.removeValue(forKey: session.id)?.close()
        playbacks[session.id] = nil
    }

    // MARK: Real-time samples

    func startRealtimeSampleDelivery(session: MediaOutputSession) {
        guard let link = links[session.id] else { return }
        for stream in routingManager.realtimeSampleStreams(for: session) where senders[stream.identifier] == nil {
            senders[stream.identifier] = (session, nil)
            Task {
                do {
                    let start: ReferenceRequest.StreamStart = switch stream.format {
                    case .audio(let rate, let channels, _): .audio(stream.identifier, sampleRate: rate, channels: channels)
                    case .video(let width, let height, let frameRate): .video(stream.identifier, width: width, height: height, frameRate: frameRate)
                    }
                    let port = try await link.request(start).port
                    guard port != 0 else {
                        throw MediaDeviceError(.sessionFailed, "\(link.device.displayName) opened no UDP port for stream \(stream.identifier)")
                    }
                    let routingManager = self.routingManager
                    let sender = try SampleSender(stream: stream, host: link.host, port: port, settings: .fromEnvironment) { error in
                        routingManager.sampleStreamFailed(stream, error: error)
                    }
                    guard self.senders[stream.identifier] != nil, stream.isOpen else { return }  // stopped meanwhile
                    self.senders[stream.identifier] = (session, sender)
                    sender.start()
                } catch {
                    self.senders[stream.identifier] = nil
                    routingManager.sampleStreamFailed(stream, error: error)
                }
            }
        }
    }

    func stopRealtimeSampleDelivery(session: MediaOutputSession) {
        let open = Set(routingManager.realtimeSampleStreams(for: session).map(\.identifier))
        for (id, entry) in senders where entry.session == session && !open.contains(id) {
            entry.sender?.finish()
            senders[id] = nil
            links[session.id]?.send(ReferenceRequest.StreamStop(stream: id))
        }
    }

    // MARK: What the receiver says

    private func linkEvent(_ event: ReceiverLink.Event, session: MediaOutputSession) {
        guard let link = links[session.id] else { return }
        switch event {
        case .state(let name, let state):
            guard name == session.id, let playback = playbacks[session.id] else { return }
            playback.update(state)
            routingManager.playbackStateChanged(session: session)
        case .ended(let name, let state, let error):
            guard name == session.id, let playback = playbacks[session.id] else { return }
            playback.update(state)
            routingManager.playbackStateChanged(session: session)
            // Failed, or replaced by another controller's play: nothing more can happen in it.
            if state.phase == .failed || error != nil {
                playbacks[session.id] = nil
                routingManager.sessionFailed(session, error: MediaDeviceError(.sessionFailed, "\(link.device.displayName): \(error ?? "playback failed")"))
            }
        case .volume:
            routingManager.volumeChanged(for: link.device)
            if playbacks[session.id] != nil { routingManager.playbackStateChanged(session: session) }
        case .data(let application, _, let data):
            routingManager.sendData(data, toApplication: application, session: session)
        case .keyframeRequest(let stream):
            senders[stream]?.sender?.requestKeyframe()
        case .restored:
            // The receiver paused the session when we dropped (PROTOCOL.md §2): learn where it stands.
            if playbacks[session.id] != nil { Task { await self.resynchronize(session, over: link) } }
        case .lost(let why):
            FileHandle.standardError.write(Data("\(why)\n".utf8))
            links.removeValue(forKey: session.id)?.close()
            playbacks[session.id] = nil
            if catalog.entry(link.device.id) == nil { reported[link.device.id] = nil }
            // The system ends the route and pauses what played there.
            routingManager.lostDevice(link.device)
        }
    }

    /// After a reconnection: the session's state as the receiver has it, or its end if the
    /// receiver no longer has it.
    private func resynchronize(_ session: MediaOutputSession, over link: ReceiverLink) async {
        guard let status = try? await link.request(ReferenceRequest.Status()), let playback = playbacks[session.id] else { return }
        link.updateVolume(ReferenceRequest.Volume(volume: status.volume, muted: status.muted))
        if let state = status.sessions.first(where: { $0.session == session.id })?.state {
            playback.update(state)
            routingManager.playbackStateChanged(session: session)
        } else {
            playbacks[session.id] = nil
            routingManager.sessionFailed(session, error: MediaDeviceError(.sessionFailed, "\(link.device.displayName) no longer has this session (it ended or was replaced while the connection was down)"))
        }
    }

    // MARK: Volume

    func setVolume(_ volume: Float, for device: MediaOutputDevice) { link(for: device)?.setVolume(Double(volume)) }
    func volume(for device: MediaOutputDevice) -> Float { Float(link(for: device)?.volume ?? 0) }
    func changeVolume(by increments: Int, for device: MediaOutputDevice) { link(for: device)?.changeVolume(by: increments) }
    func muteDevice(_ device: MediaOutputDevice) { link(for: device)?.setMuted(true) }
    func unmuteDevice(_ device: MediaOutputDevice) { link(for: device)?.setMuted(false) }
    func isDeviceMuted(_ device: MediaOutputDevice) -> Bool { link(for: device)?.muted ?? false }

    private func link(for device: MediaOutputDevice) -> ReceiverLink? { links.values.first { $0.device.id == device.id } }

    // MARK: Sessions and data

    func startSession(_ session: MediaOutputSession, identifier: String?, url: URL) {
        guard let link = links[session.id] else {
            routingManager.sessionFailed(session, error: MediaDeviceError(.sessionFailed, "\(session) is not an active route of this driver"))
            return
        }
        let play = ReferenceRequest.Play(session: session.id, url: url.absoluteString, application: identifier)
        Task {
            do {
                let state = try await link.request(play)
                let playback = ReferencePlayback(session: session.id, link: link, state: state)
                self.playbacks[session.id] = playback
                routingManager.started(application: identifier, playbackControl: playback, session: session)
            } catch {
                routingManager.sessionFailed(session, error: error)
            }
        }
    }

    func stopSession(_ session: MediaOutputSession) {
        guard playbacks.removeValue(forKey: session.id) != nil else { return }
        links[session.id]?.send(ReferenceRequest.Stop(session: session.id))
    }

    func sendData(_ data: Data, toApplication applicationIdentifier: String, session: MediaOutputSession) {
        guard data.count <= ReferenceProtocol.maximumApplicationMessage else {
            FileHandle.standardError.write(Data("not sending \(data.count) bytes to \(applicationIdentifier): over the receiver's \(ReferenceProtocol.maximumApplicationMessage)-byte limit\n".utf8))
            return
        }
        links[session.id]?.send(ReferenceRequest.AppSend(application: applicationIdentifier, session: session.id, data: Base64Payload(data)))
    }
}
