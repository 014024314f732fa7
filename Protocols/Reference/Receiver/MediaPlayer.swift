import CLinuxHelpers
import Foundation
import MediaRouteIPC
import ReferenceProtocol
import SoundOutput

/// Plays one URL at real-time pace: an ffmpeg child fetches it (over HTTP or from a file) and
/// decodes it. With a sound output, its sound (48 kHz stereo Float32 on a pipe) plays through the
/// receiver's own kept ALSA device at the receiver's volume (`PCMPipePlayer`), which paces ffmpeg;
/// with `--audio-output null`, ffmpeg renders to its null sink at real-time pace (`-readrate`),
/// doing every step a real player does before rendering. (ffmpeg's own ALSA and Pulse outputs
/// were tried: version 5.1 cuts the last 0.3 s and 2 s of the sound when it exits.)
///
/// Pausing, seeking and changing speed restart ffmpeg at the new position: ffmpeg paces its reading
/// from its own start, so one stopped and continued would race to catch up. Used on the event loop only.
final class MediaPlayer: @unchecked Sendable {
    struct Media: Sendable {
        let url: String
        let duration: Double?
        let title: String?
    }

    private(set) var media: Media?
    private(set) var phase = ReceiverPlaybackState.Phase.paused
    private(set) var speed = 1.0
    /// The media position at a wall-clock instant; while playing, position advances from it at `speed`.
    private var anchor = (position: 0.0, at: ContinuousClock.now)
    private var segment: Segment?
    private var nextSegmentID = 1
    private(set) var failure: String?
    private let loop: EventLoop
    private let ffmpeg: String
    /// Where sound goes (resolved: never `auto`), and the ALSA device for `alsa`.
    private let output: AudioOutputChoice
    private let alsaDevice: String
    /// What the sound is multiplied by: the receiver's volume, 0 when muted.
    var gain: Float = 1 { didSet { segment?.pcm?.setGain(gain) } }
    /// What the sound device holds ahead for URL playback (ffmpeg runs ahead of it by a pipe's worth).
    static let deviceLatency: Duration = .milliseconds(100)
    /// A URL that cannot be probed in this long (a server that trickles) is refused.
    static let probeTimeout: Duration = .seconds(15)
    /// What ffmpeg may open, the URL and whatever it refers to (a playlist's entries): the network
    /// only, never the receiver's own files.
    static let protocols = ["-protocol_whitelist", "http,https,tcp,tls,crypto"]
    /// Called on the loop when playback ends, fails, or reports progress.
    var onChange: () -> Void = {}

    init(ffmpeg: String, output: AudioOutputChoice, alsaDevice: String, loop: EventLoop) {
        self.ffmpeg = ffmpeg
        self.output = output
        self.alsaDevice = alsaDevice
        self.loop = loop
    }

    /// Finds out what `url` is (duration, title) with ffprobe, fetching it as the player will;
    /// fails with the reason when it cannot be fetched or is not media.
    static func probe(_ url: String, ffprobe: String) async throws(ReferenceProtocolError) -> Media {
        let output: ChildOutput
        do {
            output = try await ChildOutput.run(ffprobe, ["-v", "error"] + Self.protocols + ["-rw_timeout", "5000000", "-show_entries", "format=duration:format_tags=title",
                                                         "-of", "default=noprint_wrappers=1", url],
                                               outputLimit: 64 * 1024, timeout: Self.probeTimeout)
        } catch {
            throw ReferenceProtocolError(.mediaFailed, "cannot run ffprobe: \(error)")
        }
        guard output.termination == .exited(0) else {
            if output.termination == .signalled(SIGKILL) {
                throw ReferenceProtocolError(.mediaFailed, "cannot play \(url): finding out what it is took longer than \(Self.probeTimeout)")
            }
            let line = output.standardError.split(separator: "\n").last.map(String.init) ?? "\(output.termination)"
            say("ffprobe refused \(url): \(line)")
            throw ReferenceProtocolError(.mediaFailed, "cannot play \(url): \(FetchFailure.reason(line))")
        }
        var duration: Double?, title: String?
        for line in output.standardOutput.split(separator: "\n") {
            if line.hasPrefix("duration=") { duration = Double(line.dropFirst(9)) }
            if line.hasPrefix("TAG:title=") { title = String(line.dropFirst(10)) }
        }
        return Media(url: url, duration: duration, title: title)
    }

    var position: Double {
        guard phase == .playing else { return anchor.position }
        let elapsed = ContinuousClock.now - anchor.at
        let advanced = anchor.position + elapsed.seconds * speed
        return media?.duration.map { min(advanced, $0) } ?? advanced
    }

    var state: ReceiverPlaybackState {
        ReceiverPlaybackState(phase: media == nil ? .paused : phase, position: position, duration: media?.duration, speed: speed, title: media?.title)
    }

    /// Replaces what plays with `media`, from the start, playing.
    func load(_ media: Media) {
        stopSegment()
        self.media = media
        failure = nil
        anchor = (0, .now)
        phase = .paused
        play()
    }

    func play() {
        guard media != nil, phase != .playing else { return }
        if phase == .ended { anchor = (0, .now) }
        startSegment(at: anchor.position)
    }

    func pause() {
        guard phase == .playing else { return }
        anchor = (position, .now)
        phase = .paused
        stopSegment()
    }

    func seek(to position: Double) {
        let target = max(0, media?.duration.map { min(position, $0) } ?? position)
        let wasPlaying = phase == .playing
        stopSegment()
        anchor = (target, .now)
        if phase == .ended { phase = .paused }
        if wasPlaying { startSegment(at: target) }
    }

    func setSpeed(_ rate: Double) {
        guard rate != speed else { return }
        let wasPlaying = phase == .playing
        if wasPlaying { pause() }
        speed = rate
        if wasPlaying { play() }
    }

    /// Stops and forgets the media.
    func stop() {
        stopSegment()
        media = nil
        phase = .paused
        anchor = (0, .now)
    }

    // MARK: The ffmpeg child

    private final class Segment: @unchecked Sendable {
        let id: Int
        let child: ChildProcess
        let start: Double
        /// ffmpeg's last line on standard error.
        var errors = ""
        var watchers: [DescriptorWatcher] = []
        var stopping = false
        /// What plays its sound, with a sound output.
        var pcm: PCMPipePlayer?
        init(id: Int, child: ChildProcess, start: Double) {
            self.id = id
            self.child = child
            self.start = start
        }
    }

    private func startSegment(at start: Double) {
        guard let media else { return }
        let sink: (any SoundSink)?
        do {
            sink = output == .null ? nil : try output.openSink(alsaDevice: alsaDevice, sampleRate: 48_000, channels: 2, latency: Self.deviceLatency)
        } catch {
            return fail("cannot play \(media.url): \(error)")
        }
        var standardOutput: [Int32] = [-1, -1], errors: [Int32] = [-1, -1]
        let devNull = open("/dev/null", O_RDONLY | O_CLOEXEC)
        guard devNull >= 0, clh_pipe_cloexec(&standardOutput) == 0, clh_pipe_cloexec(&errors) == 0 else {
            fail("cannot create pipes for ffmpeg: \(String(cString: strerror(errno)))")
            ([devNull] + standardOutput + errors).filter { $0 >= 0 }.forEach { _ = close($0) }
            sink?.close(draining: false)
            return
        }
        defer { close(devNull); close(standardOutput[1]); close(errors[1]) }
        var arguments = ["-hide_banner", "-nostdin", "-loglevel", "error", "-stats_period", "0.5"]
        // To a sound output the device paces ffmpeg (through the pipe) and atempo makes the speed;
        // to the null sink, ffmpeg paces itself.
        arguments += sink == nil ? ["-progress", "pipe:1", "-readrate", String(speed)] : ["-progress", "pipe:2"]
        if start > 0 { arguments += ["-ss", String(format: "%.3f", start)] }
        arguments += Self.protocols + ["-rw_timeout", "5000000", "-i", media.url]
        if sink == nil {
            arguments += ["-f", "null", "-"]
        } else {
            if speed != 1 { arguments += ["-af", "atempo=\(min(max(speed, 0.5), 100))"] }
            arguments += ["-vn", "-f", "f32le", "-ar", "48000", "-ac", "2", "pipe:1"]
        }
        let child: ChildProcess
        do {
            let (executable, wrapped) = OrphanGuard.wrap(ffmpeg, arguments)
            child = try ChildProcess(executable: executable, arguments: wrapped, standardInput: devNull, standardOutput: standardOutput[1], standardError: errors[1])
        } catch {
            close(standardOutput[0]); close(errors[0])
            sink?.close(draining: false)
            fail("cannot start ffmpeg: \(error)")
            return
        }
        let segment = Segment(id: nextSegmentID, child: child, start: start)
        nextSegmentID += 1
        self.segment = segment
        phase = .playing
        anchor = (start, .now)
        if let sink {
            segment.pcm = PCMPipePlayer(fd: standardOutput[0], sink: sink, gain: gain)
            // Progress and errors share standard error: progress lines are key=value without spaces.
            watch(errors[0], segment) { [weak self] line in
                if !line.contains(" "), line.contains("=") { self?.progressLine(line, segment) } else { segment.errors = line }
            }
        } else {
            watch(standardOutput[0], segment) { [weak self] line in self?.progressLine(line, segment) }
            watch(errors[0], segment) { line in segment.errors = line }  // the last line says why it stopped
        }
        let loop = self.loop
        Task { [weak self] in
            let termination = await child.exitStatus(loop: loop)
            // Ended when the sound has been heard, not when ffmpeg finished decoding it.
            await segment.pcm?.finished()
            loop.execute { [weak self] in self?.segmentEnded(segment, termination) }
        }
    }

    private func watch(_ fd: Int32, _ segment: Segment, _ onLine: @escaping (String) -> Void) {
        _ = fcntl(fd, F_SETFL, O_NONBLOCK)
        var splitter = LineSplitter()
        if let watcher = try? DescriptorWatcher(fd: fd, loop: loop, onReadable: { watcher in
            let (lines, ended) = splitter.read(from: watcher.fd)
            lines.forEach(onLine)
            if ended { watcher.cancel() }
        }) {
            segment.watchers.append(watcher)
        } else {
            close(fd)
        }
    }

    /// ffmpeg's `-progress` lines: re-anchor the position on the media time it has reached.
    private func progressLine(_ line: String, _ reporting: Segment) {
        guard reporting === segment, phase == .playing, line.hasPrefix("out_time_us="), let micros = Double(line.dropFirst(12)) else { return }
        anchor = (reporting.start + micros / 1e6, .now)
        onChange()
    }

    private func segmentEnded(_ ended: Segment, _ termination: ChildProcess.Termination) {
        ended.watchers.forEach { $0.cancel() }
        guard ended === segment, !ended.stopping else { return }
        segment = nil
        if termination == .exited(0) {
            phase = .ended
            anchor = (media?.duration ?? position, .now)
            onChange()
        } else {
            let line = ended.errors.split(separator: "\n").last.map(String.init) ?? "ffmpeg \(termination)"
            say("ffmpeg stopped playing \(media?.url ?? "?"): \(line)")
            fail("playback of \(media?.url ?? "?") failed: \(FetchFailure.reason(line))")
        }
    }

    private func stopSegment() {
        guard let segment else { return }
        segment.stopping = true
        segment.pcm?.cut()
        segment.child.signal(SIGKILL)
        self.segment = nil
    }

    private func fail(_ reason: String) {
        anchor = (position, .now)
        phase = .failed
        failure = reason
        onChange()
    }
}
