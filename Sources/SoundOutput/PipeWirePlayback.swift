import CPipeWirePlayback
import Foundation

/// A playback stream on the PipeWire server the environment names (`$XDG_RUNTIME_DIR/pipewire-0`),
/// through libpipewire, kept for the stream's life; PipeWire's session manager (wireplumber) links
/// it to the default sink. Float32 interleaved, converted by PipeWire to the sink's rate and
/// channels. libpipewire rather than PipeWire's ALSA device: Debian 12's pipewire-alsa, which
/// holds that device, conflicts with the pulseaudio package, so one machine could not have both.
public final class PipeWirePlayback: SoundSink {
    public let sampleRate: Int
    public let channels: Int
    private var stream: OpaquePointer?
    /// How long the server may take nothing before a write fails (it stalled, or nothing links it).
    private static let stallMilliseconds: UInt32 = 3000

    /// Connects and opens a stream holding at most `latency` ahead of the graph; returns once the
    /// session manager linked it to a sink (5 s at most).
    public init(name: String = "MediaRoute", sampleRate: Int, channels: Int, latency: Duration) throws(SoundOutputError) {
        self.sampleRate = sampleRate
        self.channels = channels
        let frames = latency.components.seconds * Int64(sampleRate) + latency.components.attoseconds / (1_000_000_000_000_000_000 / Int64(sampleRate))
        var error = [CChar](repeating: 0, count: 256)
        guard let opened = mr_pw_playback_open(name, UInt32(sampleRate), UInt32(channels), UInt32(max(frames, 64)), &error, error.count) else {
            throw SoundOutputError(Self.failure(Self.sentence(error)))
        }
        stream = opened
    }

    deinit { close(draining: false) }

    /// The C part's sentence, up to its terminating zero.
    private static func sentence(_ error: [CChar]) -> String {
        String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Why no stream opened, and what to do: most often no server where clients look.
    private static func failure(_ reason: String) -> String {
        let socket = AudioOutputChoice.pipeWireSocket()
        guard access(socket, F_OK) == 0 else {
            return "no PipeWire server is running: nothing at \(socket); start pipewire and its session manager, wireplumber, or choose another --audio-output"
        }
        return "the PipeWire server at \(socket) cannot play: \(reason)"
    }

    public func write(_ samples: UnsafeBufferPointer<Float>) throws(SoundOutputError) {
        guard let stream, let base = samples.baseAddress else { return }
        var error = [CChar](repeating: 0, count: 256)
        guard mr_pw_playback_write(stream, base, samples.count / channels, Self.stallMilliseconds, &error, error.count) == 0 else {
            throw SoundOutputError("PipeWire stopped taking samples: \(Self.sentence(error))")
        }
    }

    public var delay: Duration {
        guard let stream else { return .zero }
        return .nanoseconds(Int64(mr_pw_playback_delay(stream)) * 1_000_000_000 / Int64(sampleRate))
    }

    public var deviceUnderruns: Int { stream.map { Int(mr_pw_playback_underruns($0)) } ?? 0 }

    public func close(draining: Bool) {
        guard let stream else { return }
        mr_pw_playback_close(stream, draining ? 1 : 0)
        self.stream = nil
    }
}
