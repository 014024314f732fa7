import Foundation
import MediaDevice

// The driver of the article "Writing a driver" (Sources/MediaDevice/MediaDevice.docc). The article
// quotes this file and ArticleCodeTests keeps the two the same; the article's copy has `@main`,
// which a test target cannot carry.

final class LampDriver: MediaDeviceExtension {
    var protocolType: UTType { UTType(exportedAs: "org.example.lamp") }
    var supportsSimultaneousSessions: Bool { false }
    lazy var routingManager: MediaDeviceRoutingManager = .routingManager(for: self)

    var volumes: [String: Float] = [:]
    var muted: Set<String> = []
    var playbacks: [MediaOutputSession: LampPlayback] = [:]

    init() {}

    func startDeviceDiscovery() {
        // Browse the network here; report each lamp as it answers, and again when it changes.
        guard let lamp = MediaOutputDevice(id: "lamp-5b5a01", displayName: "Desk Lamp",
                                           capabilities: [.urlPlayback, .realtimeAudioStreaming],
                                           deviceType: .speaker, volumeControl: .absolute, canMute: true) else { return }
        routingManager.foundDevice(lamp)
    }

    func stopDeviceDiscovery() {
        // Stop browsing; the devices already reported stay listed until lostDevice(_:).
    }

    func activateDevice(_ device: MediaOutputDevice, session: MediaOutputSession, for deviceFeatures: MediaOutputDevice.Capabilities) {
        if pairingToken(for: device) != nil {
            routingManager.activatedDevice(device, session: session)
        } else {
            routingManager.requestPairingCode(for: device, session: session, reason: "Enter the code the lamp shows.",
                                              authorizationMethod: .numericCode(length: .fourCharacter))
        }
    }

    func connectUsingPairingCode(_ pairingCode: String?, to device: MediaOutputDevice, session: MediaOutputSession) {
        guard let pairingCode else {
            routingManager.failedToActivateDevice(device, session: session, error: MediaDeviceError(.authorizationFailed, "pairing was cancelled"))
            return
        }
        guard let token = lampAccepts(pairingCode) else {
            routingManager.failedToActivateDevice(device, session: session, error: MediaDeviceError(.authorizationFailed, "the lamp refused the code"))
            return
        }
        savePairingToken(token, for: device)
        routingManager.activatedDevice(device, session: session)
    }

    func deactivateDevice(_ device: MediaOutputDevice, session: MediaOutputSession) {
        playbacks[session] = nil
    }

    func setVolume(_ volume: Float, for device: MediaOutputDevice) { volumes[device.id] = volume }
    func volume(for device: MediaOutputDevice) -> Float { volumes[device.id] ?? 0.5 }
    func changeVolume(by increments: Int, for device: MediaOutputDevice) {
        setVolume(min(max(volume(for: device) + Float(increments) * 0.05, 0), 1), for: device)
    }
    func muteDevice(_ device: MediaOutputDevice) { muted.insert(device.id) }
    func unmuteDevice(_ device: MediaOutputDevice) { muted.remove(device.id) }
    func isDeviceMuted(_ device: MediaOutputDevice) -> Bool { muted.contains(device.id) }

    func startSession(_ session: MediaOutputSession, identifier: String?, url: URL) {
        guard url.scheme == "http" || url.scheme == "https" else {
            routingManager.sessionFailed(session, error: MediaDeviceError(.unsupported, "the lamp fetches only http and https URLs"))
            return
        }
        let playback = LampPlayback(url: url)
        playbacks[session] = playback
        routingManager.started(application: identifier, playbackControl: playback, session: session)
    }

    func stopSession(_ session: MediaOutputSession) {
        playbacks[session] = nil
    }

    func sendData(_ data: Data, toApplication applicationIdentifier: String, session: MediaOutputSession) {
        // Hand `data` to the application on the lamp; its answers go back with routingManager.sendData.
    }
}
