import CALSA
import Glibc

/// A playback device opened through libasound (kept for the stream's life): a sound card
/// (`default`, `hw:0`, `plughw:0`), or a sound server's ALSA device (`pulse` from
/// libasound2-plugins; `pipewire` from pipewire-alsa, where installed). Float32 interleaved,
/// resampled by ALSA when the device runs at another rate. A device without a clock of its own (ALSA's `null`, a
/// `file` plugin in front of it) is paced by the system clock, as a card would take samples.
public final class ALSAPlayback: SoundSink {
    public let device: String
    public let sampleRate: Int
    public let channels: Int
    public private(set) var deviceUnderruns = 0
    private var pcm: OpaquePointer?
    /// The most the device holds ahead of what it played (its buffer), in frames.
    private let bufferFrames: Int
    /// The first write's monotonic time and the frames written since, while the clock is checked.
    private var firstWrite: UInt64?
    private var framesWritten = 0
    /// What paces writes once the device turned out to have no clock.
    private var systemClock: ClockPacedSink?

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
        var buffer: snd_pcm_uframes_t = 0, period: snd_pcm_uframes_t = 0
        snd_pcm_get_params(opened, &buffer, &period)
        bufferFrames = Int(buffer)
        pcm = opened
    }

    /// Whether the device has no clock of its own and the system clock paces writes instead.
    public var isPacedBySystemClock: Bool { systemClock != nil }

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
        try keepPace(samples, frames: frames)
    }

    /// A device with a clock takes at most its buffer ahead of what it played. One that took
    /// more than twice that and 50 ms in its first two seconds has none (its writes return at once): from
    /// then on the system clock paces writes, as a card's would, instead of the writer spinning
    /// through its source. Checked only at first, where a card's drift from the system clock is
    /// far below the margin.
    private func keepPace(_ samples: UnsafeBufferPointer<Float>, frames: Int) throws(SoundOutputError) {
        if let systemClock { return try systemClock.write(samples) }
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let nanoseconds = UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
        guard let firstWrite else {
            self.firstWrite = nanoseconds
            framesWritten = frames
            return
        }
        let elapsed = nanoseconds - firstWrite
        guard elapsed < 2_000_000_000 else { return }
        framesWritten += frames
        let played = Int(elapsed * UInt64(sampleRate) / 1_000_000_000)
        if framesWritten - played > 2 * bufferFrames + sampleRate / 20 {
            let systemClock = ClockPacedSink(sampleRate: sampleRate, channels: channels)
            self.systemClock = systemClock
            try systemClock.write(samples)
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
