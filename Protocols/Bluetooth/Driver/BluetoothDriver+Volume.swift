import MediaDevice

/// Volume: A2DP's absolute volume (0-127) on the transport, read back as BlueZ reports it.
extension BluetoothDriver {
    private func speaker(for device: MediaOutputDevice) -> ActiveSpeaker? { speakers.values.first { $0.device.id == device.id } }

    func setVolume(_ volume: Float, for device: MediaOutputDevice) { speaker(for: device)?.volume = volume }
    func volume(for device: MediaOutputDevice) -> Float { speaker(for: device)?.volume ?? 0 }
    func changeVolume(by increments: Int, for device: MediaOutputDevice) { speaker(for: device)?.changeVolume(by: increments) }
    func muteDevice(_ device: MediaOutputDevice) { speaker(for: device)?.isMuted = true }
    func unmuteDevice(_ device: MediaOutputDevice) { speaker(for: device)?.isMuted = false }
    func isDeviceMuted(_ device: MediaOutputDevice) -> Bool { speaker(for: device)?.isMuted ?? false }
}
