import DBus
import MediaDevice

/// Activation: pair if needed (the agent asks the person), trust, connect, and wait for BlueZ to
/// configure our A2DP endpoint's transport.
extension BluetoothDriver {
    func activateDevice(_ device: MediaOutputDevice, session: MediaOutputSession, for deviceFeatures: MediaOutputDevice.Capabilities) {
        Task {
            do {
                let speaker = try await self.connect(device, session)
                self.activating[session.id] = nil
                self.speakers[session.id] = speaker
                self.routingManager.activatedDevice(device, session: session)
            } catch {
                self.activating[session.id] = nil
                self.routingManager.failedToActivateDevice(device, session: session, error: error)
            }
        }
    }

    private func connect(_ device: MediaOutputDevice, _ session: MediaOutputSession) async throws(MediaDeviceError) -> ActiveSpeaker {
        try await blueZ.start()
        guard blueZ.isPresent else {
            throw MediaDeviceError(.connectionFailed, "cannot reach \(device.displayName): BlueZ (org.bluez) is not on the system bus")
        }
        guard let bluetooth = blueZ.objects.device(id: device.id) else {
            throw MediaDeviceError(.deviceNotFound, "BlueZ no longer knows \(device.displayName): it is out of range or was removed")
        }
        let speaker = ActiveSpeaker(device: device, session: session, path: bluetooth.path, blueZ: blueZ)
        activating[session.id] = speaker
        if !bluetooth.paired { try await pair(bluetooth, device, session) }
        if blueZ.objects.devices[bluetooth.path]?.trusted != true {
            // Trusted devices reconnect without asking again.
            try? await blueZ.setProperty("Trusted", of: BlueZ.device, at: bluetooth.path, to: .boolean(true))
        }
        if blueZ.endpoint.transport(of: bluetooth.path) == nil {
            do {
                try await blueZ.call(bluetooth.path, BlueZ.device, "Connect", timeout: .seconds(30))
            } catch {
                throw MediaDeviceError(.connectionFailed, "\(device.displayName) did not connect: \(Self.sentence(error))")
            }
        }
        guard let transport = blueZ.endpoint.transport(of: bluetooth.path) else {
            throw MediaDeviceError(.connectionFailed, "\(device.displayName) connected but set up no audio stream with us (its A2DP sink configured no SBC transport)")
        }
        speaker.transport = transport
        return speaker
    }

    private func pair(_ bluetooth: BluetoothDevice, _ device: MediaOutputDevice, _ session: MediaOutputSession) async throws(MediaDeviceError) {
        defer { cancelledByPerson.remove(session.id) }
        do {
            try await blueZ.call(bluetooth.path, BlueZ.device, "Pair", timeout: .seconds(120))
        } catch where error.name == BlueZ.Error.alreadyExists {
            // Paired meanwhile (by another agent): go on.
        } catch where cancelledByPerson.contains(session.id) {
            // bluetoothd reports an agent's refusal as a failed authentication, or as cancelled
            // when our CancelPairing got there first: either way the person cancelled.
            throw MediaDeviceError(.authorizationFailed, "pairing with \(device.displayName) was cancelled")
        } catch {
            let code: MediaDeviceError.Code = switch error.name {
            case BlueZ.Error.authenticationFailed, BlueZ.Error.authenticationRejected, BlueZ.Error.authenticationCanceled: .authorizationFailed
            case BlueZ.Error.authenticationTimeout: .timedOut
            default: .connectionFailed
            }
            let why = switch error.name {
            case BlueZ.Error.authenticationFailed: "\(device.displayName) did not accept the code"
            case BlueZ.Error.authenticationRejected: "pairing with \(device.displayName) was refused"
            case BlueZ.Error.authenticationCanceled: "pairing with \(device.displayName) was cancelled"
            case BlueZ.Error.authenticationTimeout: "\(device.displayName) did not answer while pairing"
            default: "\(device.displayName) did not pair: \(Self.sentence(error))"
            }
            throw MediaDeviceError(code, why)
        }
    }

    /// The agent asks the person through the activation of that device.
    func askPerson(_ path: DBusObjectPath, _ request: PairingAgent.Request) async -> String? {
        guard let speaker = activating.values.first(where: { $0.path == path }), pendingCodes[speaker.session.id] == nil else { return nil }
        let name = speaker.device.displayName
        let (reason, method): (String, MediaOutputDevice.AuthorizationMethod) = switch request {
        case .passkey: ("Enter the 6-digit code \(name) shows.", .numericCode(length: .sixCharacter))
        case .pinCode: ("Enter the PIN of \(name) (its manual gives it; often 0000 or 1234).", .password)
        case .confirmation(let passkey):
            ("\(name) should show \(PairingAgent.sixDigits(passkey)): if it does, type that number to confirm.", .numericCode(length: .sixCharacter))
        case .display(let code): ("Type \(code) on \(name), then type it here too to go on.", .password)
        }
        return await withCheckedContinuation { continuation in
            pendingCodes[speaker.session.id] = continuation
            routingManager.requestPairingCode(for: speaker.device, session: speaker.session, reason: reason, authorizationMethod: method)
        }
    }

    func connectUsingPairingCode(_ pairingCode: String?, to device: MediaOutputDevice, session: MediaOutputSession) {
        guard let continuation = pendingCodes.removeValue(forKey: session.id) else {
            routingManager.failedToActivateDevice(device, session: session, error: MediaDeviceError(.connectionFailed, "\(device.displayName) is not pairing any more"))
            return
        }
        if pairingCode == nil { cancelledByPerson.insert(session.id) }
        continuation.resume(returning: pairingCode)
        if pairingCode == nil, let path = activating[session.id]?.path {
            Task { try? await self.blueZ.call(path, BlueZ.device, "CancelPairing") }
        }
    }

    /// BlueZ withdrew its question (it timed out, or the device gave up): nobody waits for the answer.
    func blueZCancelledPairing() {
        for continuation in pendingCodes.values { continuation.resume(returning: nil) }
        pendingCodes = [:]
    }

    func deactivateDevice(_ device: MediaOutputDevice, session: MediaOutputSession) {
        pendingCodes.removeValue(forKey: session.id)?.resume(returning: nil)
        guard let speaker = speakers.removeValue(forKey: session.id) ?? activating.removeValue(forKey: session.id) else { return }
        speaker.shutDown()
        blueZ.setPlayerStatus("stopped")
        // Hand the device back: disconnecting lets it take another source, or sleep.
        Task { try? await self.blueZ.call(speaker.path, BlueZ.device, "Disconnect") }
    }

    /// BlueZ's error without its D-Bus name when it has a message.
    static func sentence(_ error: DBusError) -> String { error.message.isEmpty ? error.name : "\(error.message) (\(error.name))" }
}
