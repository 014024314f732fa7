import CALSA
import Glibc

/// A playback device opened through libasound (kept for the stream's life): a sound card
/// (`default`, `hw:0`, `plughw:0`), or a sound server's ALSA device (`pulse` from
/// libasound2-plugins, `pipewire` from pipewire-alsa). Float32 interleaved, resampled by ALSA
/// when the device runs at another rate.
public final class ALSAPlayback: SoundSink {
    public let device: String
    public let sampleRate: Int
    public let channels: Int
    public private(set) var deviceUnderruns = 0
    private var pcm: OpaquePointer?

    /// Opens `device` with about `latency` of buffering in the device (what it holds ahead).
    public init(device: String, sampleRate: Int, channels: Int, latency: Duration) throws(SoundOutputError) {
        self.device = device
        self.sampleRate = sampleRate
        self.channels = channels
        var opened: OpaquePointer?
        var status = snd_pcm_open(&opened, device, SND_PCM_STREAM_PLAYBACK, 0)
        guard status >= 0, let opened else {
            throw SoundOutputError("ALSA cannot open the playback device \"\(device)\": \(String(cString: snd_strerror(status)))\(Self.hint(device))")
        }
        let micros = UInt32(latency.components.seconds * 1_000_000 + latency.components.attoseconds / 1_000_000_000_000)
        status = snd_pcm_set_params(opened, SND_PCM_FORMAT_FLOAT_LE, SND_PCM_ACCESS_RW_INTERLEAVED, UInt32(channels), UInt32(sampleRate), 1, micros)
        guard status >= 0 else {
            snd_pcm_close(opened)
            throw SoundOutputError("ALSA's \"\(device)\" refused \(sampleRate) Hz, \(channels) channel(s) of Float32 with \(micros / 1000) ms of buffering: \(String(cString: snd_strerror(status)))")
        }
        pcm = opened
    }

    deinit { close(draining: false) }

    private static func hint(_ device: String) -> String {
        switch device {
        case "pulse": return " (it needs libasound2-plugins and a PulseAudio or pipewire-pulse server reachable at PULSE_SERVER or $XDG_RUNTIME_DIR/pulse/native)"
        case "pipewire": return " (it needs pipewire-alsa and a PipeWire server at $XDG_RUNTIME_DIR/pipewire-0)"
        default: return " (is there a sound card? `aplay -L` lists the devices ALSA knows)"
        }
    }

    public func write(_ samples: UnsafeBufferPointer<Float>) throws(SoundOutputError) {
        guard let pcm, let base = samples.baseAddress else { return }
        let frames = samples.count / channels
        var written = 0
        while written < frames {
            var result = snd_pcm_writei(pcm, base + written * channels, snd_pcm_uframes_t(frames - written))
            if result < 0 {
                if result == -Int(EPIPE) { deviceUnderruns += 1 }
                result = Int(snd_pcm_recover(pcm, Int32(result), 1))
                guard result >= 0 else {
                    throw SoundOutputError("ALSA's \"\(device)\" stopped taking samples: \(String(cString: snd_strerror(Int32(result))))")
                }
                continue
            }
            written += result
        }
    }

    public var delay: Duration {
        guard let pcm else { return .zero }
        var frames: snd_pcm_sframes_t = 0
        guard snd_pcm_delay(pcm, &frames) >= 0 else { return .zero }
        return .nanoseconds(Int64(frames) * 1_000_000_000 / Int64(sampleRate))
    }

    public func close(draining: Bool) {
        guard let pcm else { return }
        if draining { snd_pcm_drain(pcm) } else { snd_pcm_drop(pcm) }
        snd_pcm_close(pcm)
        self.pcm = nil
    }
}
