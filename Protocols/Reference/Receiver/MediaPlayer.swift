import CLinuxHelpers
import Foundation
import MediaRouteIPC
import ReferenceProtocol

/// Plays one URL at real-time pace: an ffmpeg child fetches it (over HTTP or from a file), decodes
/// it, and renders to the null sink (this receiver has no screen or speaker, but it does every
/// step a real one does before rendering, at the pace it would).
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
    static let setpriv = "/usr/bin/setpriv"
    /// A URL that cannot be probed in this long (a server that trickles) is refused.
    static let probeTimeout: Duration = .seconds(15)
    /// What ffmpeg may open, the URL and whatever it refers to (a playlist's entries): the network
    /// only, never the receiver's own files.
    static let protocols = ["-protocol_whitelist", "http,https,tcp,tls,crypto"]
    /// Called on the loop when playback ends, fails, or reports progress.
    var onChange: () -> Void = {}

    init(ffmpeg: String, loop: EventLoop) {
        self.ffmpeg = ffmpeg
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
        init(id: Int, child: ChildProcess, start: Double) {
            self.id = id
            self.child = child
            self.start = start
        }
    }

    private func startSegment(at start: Double) {
        guard let media else { return }
        var progress: [Int32] = [-1, -1], errors: [Int32] = [-1, -1]
        let devNull = open("/dev/null", O_RDONLY | O_CLOEXEC)
        guard devNull >= 0, clh_pipe_cloexec(&progress) == 0, clh_pipe_cloexec(&errors) == 0 else {
            fail("cannot create pipes for ffmpeg: \(String(cString: strerror(errno)))")
            ([devNull] + progress + errors).filter { $0 >= 0 }.forEach { _ = close($0) }
            return
        }
        defer { close(devNull); close(progress[1]); close(errors[1]) }
        var arguments = ["-hide_banner", "-nostdin", "-loglevel", "error", "-progress", "pipe:1", "-stats_period", "0.5",
                         "-readrate", String(speed)]
        if start > 0 { arguments += ["-ss", String(format: "%.3f", start)] }
        arguments += Self.protocols + ["-rw_timeout", "5000000", "-i", media.url, "-f", "null", "-"]
        let child: ChildProcess
        do {
            // setpriv gives ffmpeg a parent-death signal: a receiver that is killed leaves no player behind.
            // (It is tied to the spawning thread, which is the event loop's, living as long as we do.)
            let (executable, wrapped) = access(Self.setpriv, X_OK) == 0
                ? (Self.setpriv, ["--pdeathsig", "KILL", "--", ffmpeg] + arguments) : (ffmpeg, arguments)
            child = try ChildProcess(executable: executable, arguments: wrapped, standardInput: devNull, standardOutput: progress[1], standardError: errors[1])
        } catch {
            close(progress[0]); close(errors[0])
            fail("cannot start ffmpeg: \(error)")
            return
        }
        let segment = Segment(id: nextSegmentID, child: child, start: start)
        nextSegmentID += 1
        self.segment = segment
        phase = .playing
        anchor = (start, .now)
        watch(progress[0], segment) { [weak self] line in self?.progressLine(line, segment) }
        watch(errors[0], segment) { line in segment.errors = line }  // the last line says why it stopped
        let loop = self.loop
        Task { [weak self] in
            let termination = await child.exitStatus(loop: loop)
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
