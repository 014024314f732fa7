import Foundation

/// Where a receiver's sound goes (`--audio-output`): a sound server or card found on the machine,
/// or nowhere (`null`). PulseAudio and PipeWire are reached through their ALSA devices (`pulse`,
/// `pipewire`), so that one kept library, libasound, plays to all three, and the ffmpeg child that
/// plays URLs names the same device.
public enum AudioOutputChoice: String, CaseIterable, Sendable {
    case auto, pulse, pipewire, alsa, null

    /// What `auto` finds, in this order: a PulseAudio server (or PipeWire's pulse server, which
    /// answers on the same socket), a PipeWire server, a sound card; otherwise `null`. A choice
    /// other than `auto` is returned as it is.
    public func resolved(environment: [String: String] = ProcessInfo.processInfo.environment) -> AudioOutputChoice {
        guard self == .auto else { return self }
        let runtime = environment["XDG_RUNTIME_DIR"] ?? "/run/user/\(getuid())"
        if environment["PULSE_SERVER"] != nil || FileManager.default.fileExists(atPath: runtime + "/pulse/native") { return .pulse }
        if FileManager.default.fileExists(atPath: runtime + "/pipewire-0") { return .pipewire }
        let cards = (try? FileManager.default.contentsOfDirectory(atPath: "/dev/snd")) ?? []
        if cards.contains(where: { $0.hasPrefix("pcmC") && $0.hasSuffix("p") }) { return .alsa }
        return .null
    }

    /// The ALSA device this output plays to (`alsaDevice` for `alsa`); nil for `null`.
    public func device(alsaDevice: String = "default") -> String? {
        switch self {
        case .pulse: return "pulse"
        case .pipewire: return "pipewire"
        case .alsa: return alsaDevice
        case .null, .auto: return nil
        }
    }

    /// A sink for real-time audio on this output, holding about `latency` in the device.
    public func openSink(alsaDevice: String = "default", sampleRate: Int, channels: Int, latency: Duration) throws(SoundOutputError) -> any SoundSink {
        guard let device = resolved().device(alsaDevice: alsaDevice) else { return ClockPacedSink(sampleRate: sampleRate, channels: channels) }
        return try ALSAPlayback(device: device, sampleRate: sampleRate, channels: channels, latency: latency)
    }
}
