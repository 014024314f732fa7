import Foundation
import Glibc
import MediaDevice
import MediaRouteIPC
import Synchronization

/// Plays a URL here for a device that only takes samples (Bluetooth, AirPlay 1): an ffmpeg child
/// fetches and decodes it to PCM in the device's format, and the device's sender reads it.
///
/// The reader sets the pace: ffmpeg writes into a pipe and blocks when it is full, so nothing is
/// decoded faster than the device plays, and a paused sender (one that stops reading) holds the
/// media where it is. The position is that of what was handed to `read`, not of what was decoded.
/// Seeking and changing speed start a new ffmpeg at the new position; what the old one had decoded
/// is dropped.
public final class LocalMediaPlayer: PCMSource {
    /// What happened on its own, for a driver to report: called on whichever thread saw it (the
    /// reader's, or the caller of `seek`), never with a lock held.
    public enum Event: Sendable, Hashable {
        /// The first samples of the media (or of it from a new position) were read: audio is playing.
        case started
        /// Everything was read to the end, or a seek went past it.
        case ended
        /// Playback stopped early; the sentence names the URL and what went wrong.
        case failed(String)
    }

    public let format: PCMFormat
    public let media: Media
    public var duration: Double? { media.duration }
    public var metadata: AVInterfaceMetadata { media.metadata }

    /// The speeds ffmpeg's `atempo` changes without changing pitch, in one filter.
    public static let speeds: ClosedRange<Double> = 0.5...2.0
    /// How long finding out what a URL is may take by default (a server that trickles is refused).
    public static let probeTimeout: Duration = .seconds(10)

    private let ffmpeg: String
    private let input: String
    private let protocols: String
    let state: Mutex<State>

    enum Phase { case decoding, ended, failed, stopped }

    struct State {
        var phase = Phase.decoding
        var decoder: FFmpegDecoder?
        /// Where the current decoder started, and how many frames of it were handed to `read`.
        var start = 0.0
        var framesRead = 0
        var speed = 1.0
        /// Bytes of a frame split across two pipe reads.
        var carry: [UInt8] = []
        var volume: Float = 1
        var isMuted = false
        var failure: String?
        /// Whether `.started` / the end were already reported for the current decoder.
        var reportedStart = false
        var reportedEnd = false
        var onEvent: (@Sendable (Event) -> Void)?
    }

    private init(media: Media, format: PCMFormat, ffmpeg: String, input: String, protocols: String) {
        self.media = media
        self.format = format
        self.ffmpeg = ffmpeg
        self.input = input
        self.protocols = protocols
        state = Mutex(State())
    }

    /// Finds out what `url` is (an http, https or file URL), then starts decoding it from the start,
    /// at normal speed, into `format`. Fails with a sentence naming the URL and what is wrong.
    public static func open(url: URL, format: PCMFormat, ffmpeg: String = "/usr/bin/ffmpeg", ffprobe: String = "/usr/bin/ffprobe",
                            probeTimeout: Duration = LocalMediaPlayer.probeTimeout) async throws(LocalPlaybackError) -> LocalMediaPlayer {
        guard format.sampleRate > 0, format.channels > 0 else {
            throw LocalPlaybackError(.outOfRange, "cannot play \(url.absoluteString) in \(format): it is not a PCM format")
        }
        let (input, protocols) = try Self.input(for: url)
        let media = try await probe(url, ffprobe: ffprobe, timeout: probeTimeout)
        let player = LocalMediaPlayer(media: media, format: format, ffmpeg: ffmpeg, input: input, protocols: protocols)
        let decoder = try FFmpegDecoder(ffmpeg: ffmpeg, input: input, protocols: protocols, start: 0, speed: 1, format: format)
        player.state.withLock { $0.decoder = decoder }
        return player
    }

    /// Called when playback starts, ends or fails on its own.
    public var onEvent: (@Sendable (Event) -> Void)? {
        get { state.withLock { $0.onEvent } }
        set { state.withLock { $0.onEvent = newValue } }
    }

    /// Seconds into the media of what the device was handed.
    public var position: Double {
        state.withLock { state in
            let position = state.start + Double(state.framesRead) / Double(format.sampleRate) * state.speed
            return duration.map { min(position, $0) } ?? position
        }
    }

    public var speed: Double { state.withLock { $0.speed } }

    /// Why playback stopped early, once it has.
    public var failure: String? { state.withLock { $0.failure } }

    /// The PID of the ffmpeg decoding now, for diagnostics (and tests that prove it is paced).
    public var decoderPID: pid_t? { state.withLock { $0.decoder?.child.pid } }

    /// Software gain applied to every sample read: the device has no volume of its own.
    public var volume: Float {
        get { state.withLock { $0.volume } }
        set { state.withLock { $0.volume = min(max(newValue, 0), 1) } }
    }

    public var isMuted: Bool {
        get { state.withLock { $0.isMuted } }
        set { state.withLock { $0.isMuted = newValue } }
    }

    /// Plays from `seconds` (clamped to the media), dropping what was decoded; past the end, ends.
    /// After the end or a failure, this is how to play again. Does nothing once stopped.
    public func seek(to seconds: Double) {
        let target = max(0, seconds.isFinite ? seconds : 0)
        if let duration, target >= duration {
            let (old, event) = state.withLock { state -> (FFmpegDecoder?, (@Sendable (Event) -> Void)?) in
                guard state.phase != .stopped else { return (nil, nil) }
                let old = state.decoder
                state.decoder = nil
                state.phase = .ended
                state.start = duration
                state.framesRead = 0
                state.carry = []
                let report = !state.reportedEnd
                state.reportedEnd = true
                return (old, report ? state.onEvent : nil)
            }
            old?.stop()
            event?(.ended)
            return
        }
        restart(at: target, speed: nil)
    }

    /// Plays at `speed` times normal (`LocalMediaPlayer.speeds`) from where it is; pitch is kept.
    public func setSpeed(_ speed: Double) throws(LocalPlaybackError) {
        guard Self.speeds.contains(speed) else {
            throw LocalPlaybackError(.outOfRange, "a speed of \(speed) is outside what local playback can do (\(Self.speeds.lowerBound) to \(Self.speeds.upperBound))")
        }
        let playing = state.withLock { state in
            if state.phase != .decoding { state.speed = speed }
            return state.phase == .decoding && state.speed != speed
        }
        if playing { restart(at: position, speed: speed) }
    }

    /// Stops for good: ffmpeg is killed and reaped, and `read` returns `.ended` from now on.
    public func stop() {
        let old = state.withLock { state -> FFmpegDecoder? in
            state.phase = .stopped
            state.reportedEnd = true
            defer { state.decoder = nil }
            return state.decoder
        }
        old?.stop()
    }

    /// Starts a decoder at `start` (and `speed`, if given) in place of the current one.
    private func restart(at start: Double, speed newSpeed: Double?) {
        let speed = newSpeed ?? self.speed
        let decoder: FFmpegDecoder
        do {
            decoder = try FFmpegDecoder(ffmpeg: ffmpeg, input: input, protocols: protocols, start: start, speed: speed, format: format)
        } catch {
            fail("cannot play \(media.url.absoluteString): \(error)", replacing: nil)
            return
        }
        let old = state.withLock { state -> FFmpegDecoder? in
            guard state.phase != .stopped else { return decoder }
            let old = state.decoder
            state.phase = .decoding
            state.decoder = decoder
            state.start = start
            state.framesRead = 0
            state.speed = speed
            state.carry = []
            state.failure = nil
            state.reportedStart = false
            state.reportedEnd = false
            return old
        }
        old?.stop()
    }

    /// Ends playback with `reason`, if `decoder` (nil: whatever) is still the current one.
    func fail(_ reason: String, replacing decoder: FFmpegDecoder?) {
        // The old decoder leaves the lock before it goes: its deinit reaps ffmpeg.
        let (old, event) = state.withLock { state -> (FFmpegDecoder?, (@Sendable (Event) -> Void)?) in
            guard state.phase != .stopped, decoder == nil || state.decoder === decoder else { return (nil, nil) }
            let old = state.decoder
            state.decoder = nil
            state.phase = .failed
            state.failure = reason
            let report = !state.reportedEnd
            state.reportedEnd = true
            return (old, report ? state.onEvent : nil)
        }
        old?.stop()
        event?(.failed(reason))
    }
}
