import DACP
import MediaDevice
import RAOP

/// Activation: the RAOP session opened (with the receiver's password, asked of the person the
/// first time and remembered once accepted), the remembered volume sent; and its end.
extension AirPlayDriver {
    func activateDevice(_ device: MediaOutputDevice, session: MediaOutputSession, for deviceFeatures: MediaOutputDevice.Capabilities) {
        guard let receiver = receivers[device.id] else {
            return routingManager.failedToActivateDevice(device, session: session,
                                                         error: MediaDeviceError(.connectionFailed, "\(device.displayName) is no longer announced on the network"))
        }
        activating.insert(session.id)
        Task {
            defer { activating.remove(session.id) }
            do {
                let remote = DACPSession.random()
                let sender = try await open(receiver, device: device, session: session, remote: remote)
                let receiver = ActiveReceiver(device: device, session: session, sender: sender, memory: memory)
                receiver.failed = { [unowned self, unowned receiver] why in self.receiver(receiver, failed: why) }
                browseIfNeeded()
                await listen(to: remote, of: receiver)
                // Deactivated while it was opening: nothing of it stays.
                guard activating.contains(session.id) else {
                    await receiver.close()
                    return stopBrowsingIfUnused()
                }
                receiver.sendVolume()
                active[session.id] = receiver
                receiver.watchConnection()
                routingManager.activatedDevice(device, session: session)
            } catch {
                guard activating.contains(session.id) else { return }
                routingManager.failedToActivateDevice(device, session: session, error: error)
            }
        }
    }

    /// Opens the session, asking for the password when the receiver wants one and none is
    /// remembered; a refused password is forgotten, and the activation fails saying so.
    private func open(_ receiver: RAOPAnnouncement, device: MediaOutputDevice, session: MediaOutputSession,
                      remote: DACPSession) async throws(MediaDeviceError) -> RAOPSender {
        var password = receiver.requiresPassword ? memory[device.id].password : nil
        if receiver.requiresPassword, password == nil {
            password = await withCheckedContinuation { continuation in
                pendingPasswords.updateValue(continuation, forKey: session.id)?.resume(returning: nil)
                routingManager.requestPairingCode(for: device, session: session, reason: "Enter the AirPlay password of \(device.displayName).",
                                                  authorizationMethod: .password)
            }
            guard password != nil else { throw MediaDeviceError(.authorizationFailed, "connecting to \(device.displayName) was cancelled") }
        }
        let configuration = RAOPSenderConfiguration(host: receiver.host, port: receiver.port, password: password, encrypted: receiver.requiresEncryption,
                                                    dacpID: remote.dacpID, activeRemote: remote.activeRemote)
        // A receiver answers 453 while another sender plays to it, and for a moment after one
        // left (it notices the closed connection on its own time): a few tries over 3 s.
        let deadline = ContinuousClock.now + .seconds(3)
        while true {
            let sender = RAOPSender(configuration: configuration)
            do {
                try await sender.start()
                if receiver.requiresPassword { memory[device.id].password = password }
                return sender
            } catch {
                await sender.teardown()
                guard error.status == 453 else { throw Self.activationError(error, device: device, memory: memory) }
                guard ContinuousClock.now < deadline else {
                    throw MediaDeviceError(.busy, "\(device.displayName) is playing from another sender (it answered 453)")
                }
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    /// What a failed start means for the person.
    private static func activationError(_ error: RAOPError, device: MediaOutputDevice, memory: ReceiverMemory) -> MediaDeviceError {
        switch error.code {
        case .authorizationFailed:
            memory[device.id].password = nil
            return MediaDeviceError(.authorizationFailed, "\(device.displayName) did not accept the password")
        case .authorizationRequired:
            return MediaDeviceError(.authorizationFailed, "\(device.displayName) asks for a password its announcement does not mention (pw): it cannot be asked for")
        case .timedOut: return MediaDeviceError(.timedOut, "\(device.displayName) did not answer: \(error.message)")
        default: return MediaDeviceError(.connectionFailed, "cannot stream to \(device.displayName): \(error.message)")
        }
    }

    func connectUsingPairingCode(_ pairingCode: String?, to device: MediaOutputDevice, session: MediaOutputSession) {
        guard let continuation = pendingPasswords.removeValue(forKey: session.id) else {
            return routingManager.failedToActivateDevice(device, session: session, error: MediaDeviceError(.connectionFailed, "\(device.displayName) is not connecting any more"))
        }
        continuation.resume(returning: pairingCode)
    }

    func deactivateDevice(_ device: MediaOutputDevice, session: MediaOutputSession) {
        activating.remove(session.id)
        pendingPasswords.removeValue(forKey: session.id)?.resume(returning: nil)
        guard let receiver = active.removeValue(forKey: session.id) else { return }
        stopBrowsingIfUnused()
        Task { await receiver.close() }
    }

    /// Sending failed: the receiver went away or dropped the session. The route ends with the reason.
    func receiver(_ receiver: ActiveReceiver, failed why: String) {
        guard active[receiver.session.id] === receiver else { return }
        log(why)
        routingManager.deviceDeactivated(receiver.device, session: receiver.session, error: MediaDeviceError(.connectionFailed, why))
    }
}
