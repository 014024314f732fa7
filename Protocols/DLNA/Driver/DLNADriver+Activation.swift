import Foundation
import MediaDevice
import UPnP

/// Activation: our HTTP side on the address that reaches the renderer, its events, its state.
extension DLNADriver {
    func activateDevice(_ device: MediaOutputDevice, session: MediaOutputSession, for deviceFeatures: MediaOutputDevice.Capabilities) {
        guard let renderer = catalog.renderer(device.id) else {
            return routingManager.failedToActivateDevice(device, session: session, error: MediaDeviceError(.connectionFailed, "\(device.displayName) is no longer on the network"))
        }
        Task {
            do {
                let endpoint = try await endpoint(reaching: renderer)
                let active = ActiveRenderer(renderer: renderer, session: session, endpoint: endpoint, client: client)
                active.gone = { [unowned self, unowned active] why in self.renderer(active, isGone: why) }
                active.volumeChanged = { [unowned self] in self.routingManager.volumeChanged(for: device) }
                active.stateChanged = { [unowned self, unowned active] in
                    active.playback?.observe()
                    if active.playback != nil { self.routingManager.playbackStateChanged(session: session) }
                }
                try await active.start()
                self.active[session.id] = active
                routingManager.activatedDevice(device, session: session)
            } catch let error as UPnPError {
                routingManager.failedToActivateDevice(device, session: session, error: MediaDeviceError(.connectionFailed, error.description))
            } catch {
                routingManager.failedToActivateDevice(device, session: session, error: MediaDeviceError(.connectionFailed, "\(device.displayName): \(error)"))
            }
        }
    }

    /// Renderers need no pairing code.
    func connectUsingPairingCode(_ pairingCode: String?, to device: MediaOutputDevice, session: MediaOutputSession) {}

    func deactivateDevice(_ device: MediaOutputDevice, session: MediaOutputSession) {
        guard let active = active.removeValue(forKey: session.id) else { return }
        let wasPlaying = active.playback != nil || !active.streamPaths.isEmpty
        active.playback = nil
        active.shutDown()
        unpublish(active)
        // What we started on the TV stops with the route (its transport is ours no longer).
        if wasPlaying { Task { try? await active.stop() } }
    }

    /// The renderer went away (byebye, expiry, no answer): the route ends with the reason.
    func renderer(_ active: ActiveRenderer, isGone why: String) {
        guard self.active[active.session.id] === active else { return }
        self.active[active.session.id] = nil
        unpublish(active)
        log(why)
        routingManager.deviceDeactivated(active.device, session: active.session, error: MediaDeviceError(.connectionFailed, why))
        // Found again elsewhere (it moved): only its old place is gone, and it stays listed.
        if let current = catalog.renderer(active.device.id), current.description.location != active.renderer.description.location { return }
        catalog.forget(active.renderer.description.udn, device: active.device)
    }

    /// Our HTTP server on the address the kernel routes to the renderer from.
    func endpoint(reaching renderer: KnownRenderer) async throws -> LocalEndpoint {
        let host = renderer.description.avTransport.controlURL.host ?? renderer.address
        guard let address = LocalAddress.reaching(host) else {
            throw UPnPError(.unreachable, "no local address reaches \(renderer.name) at \(host)")
        }
        if let endpoint = endpoints[address] { return endpoint }
        let endpoint = try await LocalEndpoint.start(on: address)
        if let raced = endpoints[address] {
            await endpoint.close()
            return raced
        }
        endpoints[address] = endpoint
        return endpoint
    }
}
