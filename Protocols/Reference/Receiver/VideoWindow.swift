import CLinuxHelpers
import Glibc
import MediaRouteIPC

/// A picture shown in a window: an ffplay child (SDL: X11 or Wayland, scaling, window events) fed
/// on its standard input, set up to show each frame as soon as it has it. A real-time stream feeds
/// it the reassembled Annex B stream (decoding in a child keeps a hostile stream's decoder crash out
/// of the receiver); URL playback feeds it raw frames its ffmpeg decoded. The window opens with what
/// it shows and closes with it (the pipe closed, the child terminated by PID); a window that goes
/// away first (closed by a person, ffplay killed or failed) is said once, and the stream (or the
/// sound) goes on without it. A window that falls behind never holds up the receiver: past its
/// queue's limit, H.264 waiting is dropped, counted, and the window resumes at the next keyframe
/// (asked for at once); a raw frame that finds no room is dropped and counted. Used on the event loop only.
final class VideoWindow: @unchecked Sendable {  // used on the event loop only, which the compiler cannot see
    /// What opening a window needs: the program and the window's title.
    struct Setup: Sendable {
        var ffplay: String
        var title: String
    }

    /// What ffplay reads.
    enum Input: Sendable {
        /// H.264 Annex B at about `frameRate` frames a second.
        case h264(frameRate: Int)
        /// Raw I420 frames of `width`x`height` (both even) at about `frameRate` frames a second.
        case raw(width: Int, height: Int, frameRate: Int)

        /// The bytes of one raw frame.
        var frameBytes: Int {
            guard case .raw(let width, let height, _) = self else { return 0 }
            return width * height * 3 / 2
        }
    }

    /// The most H.264 bytes waiting for a slow window before they are dropped: about a second of 1080p.
    static let queueLimit = 1 << 20
    /// The most raw frames waiting for a slow window: two (a third finding no room is dropped).
    static let rawFramesQueued = 2
    /// How long ffplay may take to go after SIGTERM before it is killed.
    static let termGrace: Duration = .seconds(2)

    let pid: pid_t
    /// What the window shows, as the console names it ("stream r1"), and what goes on without it.
    private let label: String
    private let goesOn: String
    private let child: ChildProcess
    private let feed: PipeFeed
    private let loop: EventLoop
    private let requestKeyframe: () -> Void
    private var errors: DescriptorWatcher?
    private var splitter = LineSplitter()
    /// ffplay's last line on standard error: why it stopped, when it fails.
    private var lastError = ""
    private var waitingForKeyframe = false
    private var closing = false
    /// Bytes dropped because the window fell behind, and how many times it did.
    private(set) var droppedBytes = 0
    private(set) var stalls = 0
    /// Raw frames dropped because the window lagged.
    private(set) var droppedFrames = 0
    /// Why the window went away while the stream went on, once it has.
    private(set) var gone: String?

    /// Starts ffplay for `input`; `label` names what it shows on the console, `goesOn` what goes on
    /// when it goes away first; `requestKeyframe` asks the sender of H.264 for one.
    init(_ setup: Setup, input: Input, label: String, goesOn: String, loop: EventLoop, requestKeyframe: @escaping () -> Void = {}) throws(ReceiverError) {
        var feedPipe: [Int32] = [-1, -1], errorPipe: [Int32] = [-1, -1]
        let devNull = open("/dev/null", O_WRONLY | O_CLOEXEC)
        guard devNull >= 0, clh_pipe_cloexec(&feedPipe) == 0, clh_pipe_cloexec(&errorPipe) == 0 else {
            let reason = String(cString: strerror(errno))
            ([devNull] + feedPipe + errorPipe).filter { $0 >= 0 }.forEach { _ = Glibc.close($0) }
            throw ReceiverError("cannot make pipes for ffplay: \(reason)")
        }
        defer { Glibc.close(devNull); Glibc.close(feedPipe[0]); Glibc.close(errorPipe[1]) }
        let (executable, arguments) = OrphanGuard.wrap(setup.ffplay, Self.arguments(title: setup.title, input: input))
        do {
            child = try ChildProcess(executable: executable, arguments: arguments, standardInput: feedPipe[0], standardOutput: devNull, standardError: errorPipe[1])
        } catch {
            Glibc.close(feedPipe[1]); Glibc.close(errorPipe[0])
            throw ReceiverError("cannot start \(setup.ffplay): \(error)")
        }
        do {
            feed = try PipeFeed(fd: feedPipe[1], loop: loop, limit: input.frameBytes > 0 ? Self.rawFramesQueued * input.frameBytes : Self.queueLimit)
        } catch {
            Glibc.close(feedPipe[1]); Glibc.close(errorPipe[0])
            child.signal(SIGKILL)
            let child = child
            Task { _ = await child.exitStatus(loop: loop) }  // reaped, not left a zombie
            throw ReceiverError("cannot feed ffplay: \(error)")
        }
        pid = child.pid
        self.label = label
        self.goesOn = goesOn
        self.loop = loop
        self.requestKeyframe = requestKeyframe
        _ = fcntl(errorPipe[0], F_SETFL, O_NONBLOCK)
        errors = try? DescriptorWatcher(fd: errorPipe[0], loop: loop) { [weak self] watcher in
            guard let self else { return watcher.cancel() }
            self.readErrors()
        }
        if errors == nil { Glibc.close(errorPipe[0]) }
        let child = self.child
        Task { [weak self] in
            let termination = await child.exitStatus(loop: loop)
            loop.execute { [weak self] in self?.childEnded(termination) }
        }
    }

    /// A window dropped without `close()` still closes: no ffplay outlives its stream.
    deinit {
        close()
        errors?.cancel()
    }

    /// ffplay's command line: `input` from standard input, no probing or buffering ahead (each
    /// frame is shown once decoded, late ones dropped to catch up), no sound, gone at the end of input.
    static func arguments(title: String, input: Input) -> [String] {
        let format: [String]
        switch input {
        case .h264(let frameRate):
            format = ["-f", "h264", "-framerate", String(frameRate)]
        case .raw(let width, let height, _):
            // Frames come paced by the sound (and held to meet it): each is shown as it comes. Said
            // to be 1000 a second, their times stay behind ffplay's clock, so it never waits on them.
            format = ["-f", "rawvideo", "-pixel_format", "yuv420p", "-video_size", "\(width)x\(height)", "-framerate", "1000"]
        }
        return ["-hide_banner", "-loglevel", "error",
                "-fflags", "nobuffer", "-flags", "low_delay", "-framedrop", "-probesize", "32", "-analyzeduration", "0", "-sync", "ext",
                "-an", "-sn", "-autoexit", "-window_title", title] + format + ["-i", "pipe:0"]
    }

    /// Whether the window is still there.
    var isShowing: Bool { gone == nil && !closing }

    /// Hands the window what the stream reassembled (whole NAL units, each after a start code).
    func show(_ annexB: [UInt8]) {
        guard isShowing, !annexB.isEmpty else { return }
        if waitingForKeyframe {
            guard Self.startsKeyframe(annexB) else {
                droppedBytes += annexB.count
                return
            }
            waitingForKeyframe = false
        }
        guard feed.write(annexB) == .full else { return }
        let dropped = feed.dropQueued() + annexB.count
        droppedBytes += dropped
        stalls += 1
        waitingForKeyframe = true
        say("\(label): its window fell \(Self.queueLimit / 1024) KiB behind: dropped \(dropped) bytes, showing again from the next keyframe")
        requestKeyframe()
    }

    /// Hands the window one raw frame (`input` is `.raw`); dropped and counted when the window lags.
    func show(frame: [UInt8]) {
        guard isShowing, feed.write(frame) == .full else { return }
        droppedBytes += frame.count
        droppedFrames += 1
    }

    /// Closes the window: the end of its input, then SIGTERM by PID (SIGKILL if it lingers).
    func close() {
        guard !closing else { return }
        closing = true
        feed.close()
        guard gone == nil, child.exitIfEnded() == nil else { return }
        kill(child.pid, SIGTERM)
        let child = self.child
        _ = loop.schedule(after: Self.termGrace) {
            if child.exitIfEnded() == nil { kill(child.pid, SIGKILL) }
        }
    }

    /// The window as the console's `status` and the end of a stream say it.
    var summary: String {
        if let gone { return "its window went away (\(gone))" }
        let drops = stalls > 0 ? ", \(droppedBytes) bytes dropped while the window lagged (\(stalls) times)"
            : droppedFrames > 0 ? ", \(droppedFrames) frames dropped while the window lagged" : ""
        return (closing ? "shown in a window (ffplay pid \(pid), closed)" : "shown in a window (ffplay pid \(pid))") + drops
    }

    /// Whether `annexB` starts with a sequence parameter set or an IDR slice: a keyframe starts there.
    static func startsKeyframe(_ annexB: [UInt8]) -> Bool {
        guard annexB.count > 4, annexB[0...3] == [0, 0, 0, 1] else { return false }
        let type = annexB[4] & 0x1f
        return type == 7 || type == 5
    }

    private func readErrors() {
        guard let errors else { return }
        while true {
            let (lines, ended) = splitter.read(from: errors.fd)
            if let last = lines.last(where: { !$0.isEmpty }) { lastError = last }
            if ended {
                errors.cancel()
                self.errors = nil
                return
            }
            if lines.isEmpty { return }
        }
    }

    private func childEnded(_ termination: ChildProcess.Termination) {
        readErrors()  // what it said last, before its end
        errors?.cancel()
        errors = nil
        feed.close()
        guard !closing else { return }
        let reason = termination == .exited(0) ? "ffplay exited: the window was closed"
            : "ffplay \(termination)" + (lastError.isEmpty ? "" : ": \(lastError)")
        gone = reason
        say("\(label): its window went away (\(reason)); \(goesOn)")
    }
}
