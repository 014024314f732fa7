import CLinuxHelpers
import Glibc
import MediaRouteIPC

/// One real-time video stream shown in a window: an ffplay child (SDL: X11 or Wayland, scaling,
/// window events) fed the reassembled Annex B stream on its standard input, set up to show each
/// frame as soon as it is decoded. Decoding in a child keeps a hostile stream's decoder crash out
/// of the receiver. The window opens with the stream and closes with it (the pipe closed, the child
/// terminated by PID); a window that goes away first (closed by a person, ffplay killed or failed)
/// is said once, and the stream and its recording go on without it. A window that falls behind
/// never holds up the receiver: past `queueLimit` bytes waiting, what waits is dropped, counted,
/// and the window resumes at the next keyframe (asked for at once). Used on the event loop only.
final class VideoWindow: @unchecked Sendable {  // used on the event loop only, which the compiler cannot see
    /// What opening a window needs: the program and the window's title.
    struct Setup: Sendable {
        var ffplay: String
        var title: String
    }

    /// The most bytes waiting for a slow window before they are dropped: about a second of 1080p.
    static let queueLimit = 1 << 20
    /// How long ffplay may take to go after SIGTERM before it is killed.
    static let termGrace: Duration = .seconds(2)

    let pid: pid_t
    private let stream: String
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
    /// Why the window went away while the stream went on, once it has.
    private(set) var gone: String?

    /// Starts ffplay for stream `stream` at `frameRate`; `requestKeyframe` asks the sender for one.
    init(_ setup: Setup, stream: String, frameRate: Int, loop: EventLoop, requestKeyframe: @escaping () -> Void) throws(ReceiverError) {
        var input: [Int32] = [-1, -1], errorPipe: [Int32] = [-1, -1]
        let devNull = open("/dev/null", O_WRONLY | O_CLOEXEC)
        guard devNull >= 0, clh_pipe_cloexec(&input) == 0, clh_pipe_cloexec(&errorPipe) == 0 else {
            let reason = String(cString: strerror(errno))
            ([devNull] + input + errorPipe).filter { $0 >= 0 }.forEach { _ = Glibc.close($0) }
            throw ReceiverError("cannot make pipes for ffplay: \(reason)")
        }
        defer { Glibc.close(devNull); Glibc.close(input[0]); Glibc.close(errorPipe[1]) }
        let (executable, arguments) = OrphanGuard.wrap(setup.ffplay, Self.arguments(title: setup.title, frameRate: frameRate))
        do {
            child = try ChildProcess(executable: executable, arguments: arguments, standardInput: input[0], standardOutput: devNull, standardError: errorPipe[1])
        } catch {
            Glibc.close(input[1]); Glibc.close(errorPipe[0])
            throw ReceiverError("cannot start \(setup.ffplay): \(error)")
        }
        do {
            feed = try PipeFeed(fd: input[1], loop: loop, limit: Self.queueLimit)
        } catch {
            Glibc.close(input[1]); Glibc.close(errorPipe[0])
            child.signal(SIGKILL)
            let child = child
            Task { _ = await child.exitStatus(loop: loop) }  // reaped, not left a zombie
            throw ReceiverError("cannot feed ffplay: \(error)")
        }
        pid = child.pid
        self.stream = stream
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

    /// ffplay's command line: raw H.264 from standard input, no probing or buffering ahead (each
    /// frame is shown once decoded, late ones dropped to catch up), no sound, gone at the end of input.
    static func arguments(title: String, frameRate: Int) -> [String] {
        ["-hide_banner", "-loglevel", "error",
         "-fflags", "nobuffer", "-flags", "low_delay", "-framedrop", "-probesize", "32", "-analyzeduration", "0", "-sync", "ext",
         "-an", "-sn", "-autoexit", "-window_title", title,
         "-f", "h264", "-framerate", String(frameRate), "-i", "pipe:0"]
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
        say("stream \(stream): its window fell \(Self.queueLimit / 1024) KiB behind: dropped \(dropped) bytes, showing again from the next keyframe")
        requestKeyframe()
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
        let drops = stalls > 0 ? ", \(droppedBytes) bytes dropped while the window lagged (\(stalls) times)" : ""
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
        say("stream \(stream): its window went away (\(reason)); the stream goes on without it")
    }
}
