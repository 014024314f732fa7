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
/// A URL with a picture, when the receiver shows video in windows, also shows in a window of its
/// own for as long as it plays (`VideoWindow`): the same ffmpeg child decodes the picture too, to
/// raw frames on a second pipe that `FrameRelay` carries to the window, so one process paces picture
/// and sound alike (the sound device, through the sound pipe), and each frame is held until the
/// sound of its moment has been heard.
///
/// Pausing, seeking and changing speed restart ffmpeg at the new position: ffmpeg paces its reading
/// from its own start, so one stopped and continued would race to catch up. The window stays
/// through them (paused, it shows the last frame). Used on the event loop only.
final class MediaPlayer: @unchecked Sendable {
    struct Media: Sendable {
        let url: String
        let duration: Double?
        let title: String?
        /// Its picture, if it has one (cover art is none).
        var picture: Picture?
    }

    /// The video stream a window shows, and the size it is shown at.
    struct Picture: Sendable, Equatable {
        /// ffmpeg's index of the stream in the media.
        let stream: Int
        let width: Int
        let height: Int
        let frameRate: Int

        /// The stream as it is decoded for a window: its size scaled down to fit `largest` and its
        /// rate to 60 frames a second at most (raw frames cross two pipes), both sides even (I420
        /// halves them).
        init(stream: Int, width: Int, height: Int, frameRate: Double?, largest: (width: Int, height: Int) = (1280, 720)) {
            self.stream = stream
            let scale = min(1, Double(largest.width) / Double(max(width, 1)), Double(largest.height) / Double(max(height, 1)))
            self.width = max(2, Int(Double(width) * scale) & ~1)
            self.height = max(2, Int(Double(height) * scale) & ~1)
            self.frameRate = max(1, min(60, Int((frameRate ?? 25).rounded())))
        }
    }

    private(set) var media: Media?
    private(set) var phase = ReceiverPlaybackState.Phase.paused
    private(set) var speed = 1.0
    /// The media position at a wall-clock instant; while playing, position advances from it at `speed`.
    private var anchor = (position: 0.0, at: ContinuousClock.now)
    private var segment: Segment?
    private var nextSegmentID = 1
    private(set) var failure: String?
    /// The window the media's picture shows in, while it plays (paused included).
    private(set) var window: VideoWindow?
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

    /// Finds out what `url` is (duration, title, picture) with ffprobe, fetching it as the player
    /// will; fails with the reason when it cannot be fetched or is not media.
    static func probe(_ url: String, ffprobe: String) async throws(ReferenceProtocolError) -> Media {
        let output: ChildOutput
        do {
            output = try await ChildOutput.run(ffprobe, ["-v", "error"] + Self.protocols + ["-rw_timeout", "5000000", "-show_entries",
                                                         "format=duration:format_tags=title:stream=index,codec_type,width,height,avg_frame_rate:stream_disposition=attached_pic",
                                                         "-of", "json", url],
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
        guard let found = ProbeReport(json: output.standardOutput) else {
            throw ReferenceProtocolError(.mediaFailed, "cannot play \(url): ffprobe's report on it did not read as JSON")
        }
        return found.media(url)
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

    /// Replaces what plays with `media`, from the start, playing; its picture, if it has one, in a
    /// window `window` describes (`label` names it on the console), if given.
    func load(_ media: Media, window setup: (setup: VideoWindow.Setup, label: String)? = nil) {
        stopSegment()
        closeWindow()
        if let setup, let picture = media.picture {
            do {
                window = try VideoWindow(setup.setup, input: .raw(width: picture.width, height: picture.height, frameRate: picture.frameRate),
                                         label: setup.label, goesOn: "the sound goes on without it", loop: loop)
            } catch {
                say("\(setup.label): no window: \(error)")
            }
        }
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

    /// Stops and forgets the media, and closes its window.
    func stop() {
        stopSegment()
        closeWindow()
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
        /// What carries its picture to the window, if it decodes one.
        var frames: FrameRelay?
        init(id: Int, child: ChildProcess, start: Double) {
            self.id = id
            self.child = child
            self.start = start
        }
    }

    private func startSegment(at start: Double) {
        guard let media else { return }
        let playsSound = output != .null
        // The picture, to a window still showing.
        let picture = window?.isShowing == true ? media.picture : nil
        var standardOutput: [Int32] = [-1, -1], errors: [Int32] = [-1, -1], pictures: [Int32] = [-1, -1]
        let devNull = open("/dev/null", O_RDONLY | O_CLOEXEC)
        guard devNull >= 0, clh_pipe_cloexec(&standardOutput) == 0, clh_pipe_cloexec(&errors) == 0, picture == nil || clh_pipe_cloexec(&pictures) == 0 else {
            fail("cannot create pipes for ffmpeg: \(String(cString: strerror(errno)))")
            ([devNull] + standardOutput + errors + pictures).filter { $0 >= 0 }.forEach { _ = close($0) }
            return
        }
        defer { ([devNull, standardOutput[1], errors[1], pictures[1]]).filter { $0 >= 0 }.forEach { _ = close($0) } }
        var arguments = ["-hide_banner", "-nostdin", "-loglevel", "error", "-stats_period", "0.5"]
        // To a sound output the device paces ffmpeg (through the pipe) and atempo makes the speed;
        // to the null sink, ffmpeg paces itself.
        arguments += !playsSound ? ["-progress", "pipe:1", "-readrate", String(speed)] : ["-progress", "pipe:2"]
        if start > 0 { arguments += ["-ss", String(format: "%.3f", start)] }
        arguments += Self.protocols + ["-rw_timeout", "5000000", "-i", media.url]
        if !playsSound {
            arguments += ["-f", "null", "-"]
        } else {
            if speed != 1 { arguments += ["-af", "atempo=\(min(max(speed, 0.5), 100))"] }
            arguments += ["-vn", "-f", "f32le", "-ar", "48000", "-ac", "2", "pipe:1"]
        }
        if let picture {
            // A second output: raw frames on descriptor 3, at the media's frame rate whatever the speed
            // (the fps filter keeps each frame's time; ffmpeg's own -r shifts them at other speeds).
            let speeded = speed != 1 ? "setpts=PTS/\(speed)," : ""
            arguments += ["-map", "0:\(picture.stream)", "-vf", "\(speeded)fps=\(picture.frameRate),scale=\(picture.width):\(picture.height),format=yuv420p",
                          "-fps_mode", "passthrough", "-f", "rawvideo", "pipe:\(ChildProcess.socketDescriptor)"]
        }
        let child: ChildProcess
        do {
            let (executable, wrapped) = OrphanGuard.wrap(ffmpeg, arguments)
            // The picture pipe becomes the child's descriptor 3 (ChildProcess gives it there, socket or not).
            child = try ChildProcess(executable: executable, arguments: wrapped, socket: picture == nil ? nil : pictures[1],
                                     standardInput: devNull, standardOutput: standardOutput[1], standardError: errors[1])
        } catch {
            ([standardOutput[0], errors[0], pictures[0]]).filter { $0 >= 0 }.forEach { _ = close($0) }
            fail("cannot start ffmpeg: \(error)")
            return
        }
        let segment = Segment(id: nextSegmentID, child: child, start: start)
        nextSegmentID += 1
        self.segment = segment
        phase = .playing
        anchor = (start, .now)
        if playsSound {
            // The sound device opens on the player's thread (it can take seconds); if it cannot,
            // ffmpeg is stopped and the playback fails with the reason (`segmentEnded`).
            let (output, alsaDevice, latency, loop) = (output, alsaDevice, Self.deviceLatency, loop)
            segment.pcm = PCMPipePlayer(fd: standardOutput[0], gain: gain, openSink: { () throws(SoundOutputError) in
                try output.openSink(alsaDevice: alsaDevice, sampleRate: 48_000, channels: 2, latency: latency)
            }, onFailure: { loop.execute { [weak self] in if self?.segment === segment { segment.child.signal(SIGKILL) } } })
        }
        if let picture, let window {
            let pcm = segment.pcm
            do {
                segment.frames = try FrameRelay(fd: pictures[0], frameBytes: picture.width * picture.height * 3 / 2,
                                                delay: { Self.wait(forFrame: $0, at: picture.frameRate, sound: pcm) }, loop: loop) { [weak window] in window?.show(frame: $0) }
            } catch {
                close(pictures[0])
                say("\(media.url): its picture cannot reach its window: \(error)")
            }
        }
        if playsSound {
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

    /// How long frame `number` of a segment waits to be shown: until the sound of its moment is heard.
    /// Both come out of ffmpeg on the same timeline (from 0 at the segment's start, after the speed
    /// is applied): the frame at `frameRate` a second, the sound as much as `sound` says is heard. Without a
    /// sound output (ffmpeg paces itself) it waits for nothing; never more than a second, whatever happens.
    /// Before the first sound is written, it is expected a device's buffer from now.
    static func wait(forFrame number: Int, at frameRate: Int, sound: PCMPipePlayer?) -> Duration {
        guard let sound else { return .zero }
        // Nothing written yet: the first sound has the device's whole latency still to go.
        let heard: Duration = sound.heard ?? (.zero - deviceLatency)
        let shown: Duration = .microseconds(number * 1_000_000 / frameRate)
        return min(.seconds(1), max(.zero, shown - heard))
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
        ended.frames?.cancel()
        closeWindow()
        if let sound = ended.pcm?.failure {
            fail("cannot play \(media?.url ?? "?"): \(sound)")
        } else if termination == .exited(0) {
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
        segment.frames?.cancel()
        segment.child.signal(SIGKILL)
        self.segment = nil
    }

    private func closeWindow() {
        window?.close()
        window = nil
    }

    private func fail(_ reason: String) {
        closeWindow()
        anchor = (position, .now)
        phase = .failed
        failure = reason
        onChange()
    }
}
