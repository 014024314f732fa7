import Foundation
import MediaRouteIPC
import Synchronization

/// Plays a URL here for a device that only takes samples (Bluetooth, AirPlay 1): ffmpeg fetches
/// and decodes it to the device's PCM, and the device's sender reads it at the device's pace.
/// Nothing races ahead: ffmpeg writes into a pipe only as fast as `read` empties it, so the
/// position is that of what the device was given, and pausing is simply not reading.
///
/// Seeking and changing speed restart ffmpeg at the new position. At the end of the media `read`
/// returns `.starved` (the sender idles) and `onEvent` says `.ended`; `stop()` makes it `.ended`.
public final class LocalMediaPlayer: PCMSource, Sendable {
    public enum Event: Sendable, Equatable {
        /// The first samples of a start or seek were read: playback is under way.
        case started
        /// Everything was read.
        case ended
        /// Fetching or decoding failed; the sentence says what happened.
        case failed(String)
    }

    public let format: PCMFormat
    public let url: URL
    public let duration: Double?
    public let title: String?
    public let artist: String?
    public let album: String?
    private let ffmpeg: String

    private struct State {
        var decoder: PCMDecoderProcess?
        /// Bumped by every restart: a read that began before it throws its bytes away.
        var generation = 0
        /// Where the current decoder started, and how many frames of it were handed out.
        var start = 0.0
        var framesRead = 0
        var speed = 1.0
        var volume: Float = 1
        var isMuted = false
        var hasStarted = false
        var hasEnded = false
        var failure: String?
        var stopped = false
        var onEvent: (@Sendable (Event) -> Void)?
        /// Bytes of an incomplete frame carried to the next read.
        var partial: [UInt8] = []
    }
    private let state: Mutex<State>

    /// Probes `url` (bounded by a timeout), refusing what cannot play with a sentence naming it,
    /// then starts decoding it from the beginning.
    public static func open(url: URL, format: PCMFormat, ffmpeg: String = "/usr/bin/ffmpeg",
                            ffprobe: String = "/usr/bin/ffprobe") async throws(LocalPlaybackError) -> LocalMediaPlayer {
        guard let scheme = url.scheme?.lowercased(), ["http", "https", "file"].contains(scheme) else {
            throw LocalPlaybackError("cannot play \(url.absoluteString): only http, https and file URLs can be played here")
        }
        if url.isFileURL, !FileManager.default.isReadableFile(atPath: url.path) {
            throw LocalPlaybackError("cannot play \(url.absoluteString): there is no readable file at \(url.path)")
        }
        let probe = try await MediaProbe.probe(url, ffprobe: ffprobe)
        let player = LocalMediaPlayer(url: url, format: format, probe: probe, ffmpeg: ffmpeg)
        try player.restart(at: 0)
        return player
    }

    private init(url: URL, format: PCMFormat, probe: MediaProbe, ffmpeg: String) {
        self.url = url
        self.format = format
        self.ffmpeg = ffmpeg
        duration = probe.duration
        (title, artist, album) = (probe.title, probe.artist, probe.album)
        state = Mutex(State())
    }

    deinit { stop() }

    /// Told of starts, the end and failures, on the reading thread: keep it short.
    public var onEvent: (@Sendable (Event) -> Void)? {
        get { state.withLock { $0.onEvent } }
        set { state.withLock { $0.onEvent = newValue } }
    }

    /// The media position of what was read (seconds).
    public var position: Double {
        state.withLock { s in
            let position = s.start + Double(s.framesRead) / Double(format.sampleRate) * s.speed
            return duration.map { min(position, $0) } ?? position
        }
    }

    public var speed: Double { state.withLock { $0.speed } }
    public var hasStarted: Bool { state.withLock { $0.hasStarted } }
    public var hasEnded: Bool { state.withLock { $0.hasEnded } }
    public var failure: String? { state.withLock { $0.failure } }

    /// Software gain (0...1) and mute, applied as samples are read.
    public var volume: Float {
        get { state.withLock { $0.volume } }
        set { state.withLock { $0.volume = min(max(newValue, 0), 1) } }
    }
    public var isMuted: Bool {
        get { state.withLock { $0.isMuted } }
        set { state.withLock { $0.isMuted = newValue } }
    }

    /// Plays from `seconds` (clamped to the media), discarding what was decoded before.
    public func seek(to seconds: Double) throws(LocalPlaybackError) {
        try restart(at: max(0, duration.map { min(seconds, $0) } ?? seconds))
    }

    /// 0.5 to 2 times; restarts at the current position.
    public func setSpeed(_ speed: Double) throws(LocalPlaybackError) {
        guard (0.5...2).contains(speed) else { throw LocalPlaybackError("a speed must be from 0.5 to 2, not \(speed)") }
        let position = position
        state.withLock { $0.speed = speed }
        try restart(at: position)
    }

    /// Stops ffmpeg; `read` returns `.ended` from now on.
    public func stop() {
        let decoder = state.withLock { s -> PCMDecoderProcess? in
            s.stopped = true
            s.generation += 1
            defer { s.decoder = nil }
            return s.decoder
        }
        decoder?.stop()
    }

    /// The ffmpeg child's PID while one runs (for tests and the operator's log).
    public var decoderPID: Int32? { state.withLock { $0.decoder?.pid } }

    private func restart(at position: Double) throws(LocalPlaybackError) {
        let speed = state.withLock { $0.speed }
        let decoder = try PCMDecoderProcess(url: url, format: format, from: position, speed: speed, ffmpeg: ffmpeg)
        let old = state.withLock { s -> PCMDecoderProcess? in
            let old = s.decoder
            if s.stopped {
                return decoder  // stopped meanwhile: the new one goes too
            }
            s.decoder = decoder
            s.generation += 1
            s.start = position
            s.framesRead = 0
            s.partial = []
            s.hasStarted = false
            s.hasEnded = false
            s.failure = nil
            return old
        }
        old?.stop()
    }

    // MARK: PCMSource

    public func read(into buffer: UnsafeMutableBufferPointer<Int16>, waitingUpTo timeout: Duration) -> PCMRead {
        let (decoder, generation, stopped, ended) = state.withLock { ($0.decoder, $0.generation, $0.stopped, $0.hasEnded) }
        if stopped { return .ended }
        guard let decoder, !ended else { return .starved }
        let frameBytes = format.bytesPerFrame
        let capacity = (buffer.count / format.channels) * frameBytes
        let raw = UnsafeMutableRawBufferPointer(buffer)
        // Bytes of a frame split across reads come first.
        let carried = state.withLock { s -> Int in
            guard s.generation == generation else { return 0 }
            let count = min(s.partial.count, capacity)
            s.partial.withUnsafeBytes { raw.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
            s.partial.removeAll()
            return count
        }
        let milliseconds = Int32(clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        guard let got = decoder.read(into: UnsafeMutableRawBufferPointer(rebasing: raw[carried..<capacity]), waitingUpTo: milliseconds) else {
            return finished(decoder, generation)
        }
        let total = carried + got
        let frames = total / frameBytes
        let event = state.withLock { s -> Event? in
            guard s.generation == generation else { return nil }
            s.partial = Array(raw[(frames * frameBytes)..<total])
            s.framesRead += frames
            let gain = s.isMuted ? 0 : s.volume
            if gain < 1 {
                let factor = Int32(gain * 32768)
                for i in 0..<(frames * format.channels) { buffer[i] = Int16(truncatingIfNeeded: (Int32(buffer[i]) * factor) >> 15) }
            }
            guard frames > 0, !s.hasStarted else { return nil }
            s.hasStarted = true
            return .started
        }
        guard state.withLock({ $0.generation == generation }) else { return .starved }
        if let event { onEvent?(event) }
        return frames > 0 ? .frames(frames) : .starved
    }

    /// The decoder's output ended: the media ended, or fetching or decoding failed.
    private func finished(_ decoder: PCMDecoderProcess, _ generation: Int) -> PCMRead {
        let failure = decoder.failure().map { "\(url.absoluteString) stopped playing: \($0)" }
        let report = state.withLock { s -> Bool in
            guard s.generation == generation, !s.hasEnded else { return false }
            s.hasEnded = true
            s.failure = failure
            if failure == nil, let duration { s.framesRead = Int(((duration - s.start) / s.speed) * Double(format.sampleRate)) }
            return true
        }
        if report { onEvent?(failure.map(Event.failed) ?? .ended) }
        return .starved
    }
}
