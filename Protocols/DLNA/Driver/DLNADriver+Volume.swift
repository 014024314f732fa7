import MediaDevice

/// Volume and mute through RenderingControl (0–100 on the renderer, 0–1 here); changes made at
/// the renderer (its remote, another control point) arrive by event and reach apps.
extension DLNADriver {
    private func renderer(for device: MediaOutputDevice) -> ActiveRenderer? { active.values.first { $0.device.id == device.id } }

    func setVolume(_ volume: Float, for device: MediaOutputDevice) {
        guard let renderer = renderer(for: device) else { return }
        Task { try? await renderer.setVolume(Int((volume * 100).rounded())) }
    }

    func volume(for device: MediaOutputDevice) -> Float { Float(renderer(for: device)?.volumeLevel ?? 0) / 100 }

    /// One increment is 5 of the renderer's 100 steps.
    func changeVolume(by increments: Int, for device: MediaOutputDevice) {
        guard let renderer = renderer(for: device) else { return }
        Task { try? await renderer.setVolume(renderer.volumeLevel + increments * 5) }
    }

    func muteDevice(_ device: MediaOutputDevice) {
        guard let renderer = renderer(for: device) else { return }
        Task { try? await renderer.setMuted(true) }
    }

    func unmuteDevice(_ device: MediaOutputDevice) {
        guard let renderer = renderer(for: device) else { return }
        Task { try? await renderer.setMuted(false) }
    }

    func isDeviceMuted(_ device: MediaOutputDevice) -> Bool { renderer(for: device)?.muted ?? false }
}
