import Foundation

/// Where a receiver's sound goes (`--audio-output`): a sound server or card found on the machine,
/// or nowhere (`null`). PulseAudio and a card are reached through ALSA's libasound (PulseAudio
/// through its ALSA device, `pulse`), PipeWire through libpipewire's stream; URL playback (ffmpeg's
/// PCM on a pipe) and real-time audio play through the same sink.
public enum AudioOutputChoice: String, CaseIterable, Sendable {
    case auto, pulse, pipewire, alsa, null

    /// What `auto` finds, in this order: a PulseAudio server (or PipeWire's pulse server, which
    /// answers on the same socket), a PipeWire server (its socket, `pipeWireSocket`), a sound card;
    /// otherwise `null`. A choice other than `auto` is returned as it is.
    public func resolved(environment: [String: String] = ProcessInfo.processInfo.environment) -> AudioOutputChoice {
        guard self == .auto else { return self }
        let runtime = environment["XDG_RUNTIME_DIR"] ?? "/run/user/\(getuid())"
        if environment["PULSE_SERVER"] != nil || FileManager.default.fileExists(atPath: runtime + "/pulse/native") { return .pulse }
        if FileManager.default.fileExists(atPath: Self.pipeWireSocket(environment: environment)) { return .pipewire }
        let cards = (try? FileManager.default.contentsOfDirectory(atPath: "/dev/snd")) ?? []
        if cards.contains(where: { $0.hasPrefix("pcmC") && $0.hasSuffix("p") }) { return .alsa }
        return .null
    }

    /// Where a PipeWire client (PipeWire's ALSA device among them) looks for the server's socket:
    /// `PIPEWIRE_REMOTE` (`pipewire-0`) in `PIPEWIRE_RUNTIME_DIR`, else in `XDG_RUNTIME_DIR`.
    public static func pipeWireSocket(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        let name = environment["PIPEWIRE_REMOTE"].flatMap { $0.isEmpty ? nil : $0 } ?? "pipewire-0"
        if name.hasPrefix("/") { return name }
        let runtime = environment["PIPEWIRE_RUNTIME_DIR"] ?? environment["XDG_RUNTIME_DIR"] ?? "/run/user/\(getuid())"
        return runtime + "/" + name
    }

    /// The ALSA device this output plays to (`alsaDevice` for `alsa`); nil for PipeWire and `null`.
    public func device(alsaDevice: String = "default") -> String? {
        switch self {
        case .pulse: return "pulse"
        case .alsa: return alsaDevice
        case .pipewire, .null, .auto: return nil
        }
    }

    /// Where this output plays, in words (`ALSA device "pulse"`, `a PipeWire stream`); nil for `null`.
    public func destination(alsaDevice: String = "default") -> String? {
        if self == .pipewire { return "a PipeWire stream" }
        return device(alsaDevice: alsaDevice).map { "ALSA device \"\($0)\"" }
    }

    /// A sink for real-time audio on this output, holding about `latency` in the device.
    public func openSink(alsaDevice: String = "default", sampleRate: Int, channels: Int, latency: Duration) throws(SoundOutputError) -> any SoundSink {
        let output = resolved()
        if output == .pipewire { return try PipeWirePlayback(sampleRate: sampleRate, channels: channels, latency: latency) }
        guard let device = output.device(alsaDevice: alsaDevice) else { return ClockPacedSink(sampleRate: sampleRate, channels: channels) }
        return try ALSAPlayback(device: device, sampleRate: sampleRate, channels: channels, latency: latency)
    }
}
