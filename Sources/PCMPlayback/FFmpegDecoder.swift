import CLinuxHelpers
import Foundation
import Glibc
import MediaRouteIPC
import Synchronization

/// One ffmpeg child decoding a URL, from a position at a speed, to raw PCM on a pipe: the pipe's
/// capacity is all it may decode ahead of its reader (ffmpeg blocks writing to a full pipe).
///
/// An ffmpeg child rather than libav* in this process: the project already runs ffmpeg and
/// ffprobe children (the reference receiver), a child that crashes or hangs on hostile media
/// cannot take the driver with it, and it is stopped by its PID. Not shared with the receiver's
/// `MediaPlayer`: that one renders to ffmpeg's null sink on the event loop, this one hands PCM to a
/// reader thread through a pipe; the only common parts are a few arguments.
///
/// Seeking or changing speed starts a new decoder; the old one is killed and reaped when the last
/// reference to it goes (a reader may still be polling its pipe, so its descriptors live as long).
final class FFmpegDecoder: Sendable {
    let child: ChildProcess
    /// The read end of ffmpeg's standard output (PCM), non-blocking.
    let output: Int32
    /// The read end of ffmpeg's standard error, non-blocking; drained into `errorText`.
    private let errors: Int32
    /// Readable once the child has ended; -1 on kernels without pidfds (then ending is polled).
    let exitDescriptor: Int32
    /// The media position (seconds) and speed this decoder started at.
    let start: Double
    let speed: Double
    /// The last `errorLimit` bytes of standard error, and whether it reached its end.
    private let errorState = Mutex<(text: [UInt8], ended: Bool)>(([], false))
    static let errorLimit = 4096

    init(ffmpeg: String, input: String, protocols: String, start: Double, speed: Double, format: PCMFormat) throws(LocalPlaybackError) {
        var out: [Int32] = [-1, -1], err: [Int32] = [-1, -1]
        let devNull = open("/dev/null", O_RDONLY | O_CLOEXEC)
        guard devNull >= 0, clh_pipe_cloexec(&out) == 0, clh_pipe_cloexec(&err) == 0 else {
            let reason = String(cString: strerror(errno))
            ([devNull] + out + err).filter { $0 >= 0 }.forEach { _ = close($0) }
            throw LocalPlaybackError(.decoderUnavailable, "cannot start ffmpeg: cannot create its pipes (\(reason))")
        }
        defer { close(devNull); close(out[1]); close(err[1]) }
        #if _endian(little)
        let sampleFormat = "s16le"
        #else
        let sampleFormat = "s16be"
        #endif
        var arguments = ["-hide_banner", "-nostdin", "-loglevel", "error"]
        if start > 0 { arguments += ["-ss", String(format: "%.3f", start)] }
        arguments += ["-protocol_whitelist", protocols, "-rw_timeout", "5000000", "-i", input, "-vn", "-sn", "-dn"]
        // One atempo covers 0.5...2.0 in every ffmpeg (older ones allowed no more per instance).
        if speed != 1 { arguments += ["-af", "atempo=\(speed)"] }
        arguments += ["-f", sampleFormat, "-acodec", "pcm_\(sampleFormat)", "-ar", String(format.sampleRate), "-ac", String(format.channels), "pipe:1"]
        // No parent-death signal (setpriv): it is tied to the spawning thread, which may be any
        // thread here. A driver that dies closes the pipe, and ffmpeg dies of SIGPIPE on its next write.
        do {
            child = try ChildProcess(executable: ffmpeg, arguments: arguments, standardInput: devNull, standardOutput: out[1], standardError: err[1])
        } catch {
            close(out[0]); close(err[0])
            throw LocalPlaybackError(.decoderUnavailable, "cannot start ffmpeg (\(ffmpeg)): \(error)")
        }
        _ = fcntl(out[0], F_SETFL, O_NONBLOCK)
        _ = fcntl(err[0], F_SETFL, O_NONBLOCK)
        output = out[0]
        errors = err[0]
        exitDescriptor = clh_pidfd_open(child.pid)
        self.start = start
        self.speed = speed
    }

    deinit {
        stop()
        _ = child.waitForExit()  // killed: its end is a matter of moments
        close(output)
        close(errors)
        if exitDescriptor >= 0 { close(exitDescriptor) }
    }

    /// Kills ffmpeg by its PID, unless it has already been reaped (its PID may be another's by now).
    func stop() {
        if child.exitIfEnded() == nil { kill(child.pid, SIGKILL) }
    }

    /// The descriptor to poll for more standard error, or nil once it has ended.
    var pendingErrors: Int32? { errorState.withLock { $0.ended } ? nil : errors }

    /// Reads what ffmpeg has written on standard error so far, keeping the last few kilobytes.
    func drainErrors() {
        errorState.withLock { state in
            var chunk = [UInt8](repeating: 0, count: 4096)
            while !state.ended {
                let n = read(errors, &chunk, chunk.count)
                if n > 0 {
                    state.text += chunk[0..<n]
                    if state.text.count > Self.errorLimit { state.text.removeFirst(state.text.count - Self.errorLimit) }
                } else if n == 0 || (errno != EAGAIN && errno != EINTR) {
                    state.ended = true
                } else if errno == EAGAIN {
                    return
                }
            }
        }
    }

    var errorText: String { errorState.withLock { String(decoding: $0.text, as: UTF8.self) } }

    /// Waits up to `deadline` for the child to end (its output has); nil if it has not by then.
    func waitForEnd(until deadline: ContinuousClock.Instant) -> ChildProcess.Termination? {
        while true {
            if let ended = child.exitIfEnded() { return ended }
            let remaining = deadline - .now
            guard remaining > .zero else { return nil }
            let milliseconds = Int32(min(max(remaining.milliseconds, 1), exitDescriptor >= 0 ? 60_000 : 10))
            var descriptors = [pollfd(fd: exitDescriptor, events: Int16(POLLIN), revents: 0)]
            if exitDescriptor >= 0 { _ = poll(&descriptors, 1, milliseconds) } else { _ = poll(nil, 0, milliseconds) }
        }
    }
}
