import CLinuxHelpers
import Foundation
import MediaRouteIPC

/// One ffmpeg child decoding a URL to raw PCM on a pipe, from a position and at a speed. It writes
/// only as fast as the pipe is read: pacing is the reader's. Stopped by PID and reaped.
///
/// An ffmpeg child rather than libav* in-process: the receiver already runs ffmpeg, a bad stream
/// or a decoder crash stays in the child, and the driver needs no libav* link (a large build and
/// a moving API).
final class PCMDecoderProcess: @unchecked Sendable {  // used by the player under its lock
    let output: Int32
    private let errors: Int32
    private let process: ChildProcess
    private var stopped = false

    init(url: URL, format: PCMFormat, from position: Double, speed: Double, ffmpeg: String) throws(LocalPlaybackError) {
        var pipe: [Int32] = [-1, -1]
        guard clh_pipe_cloexec(&pipe) == 0 else { throw LocalPlaybackError("cannot make a pipe for ffmpeg: errno \(errno)") }
        let errors = clh_memfd_create("ffmpeg-errors")
        guard errors >= 0 else {
            close(pipe[0]); close(pipe[1])
            throw LocalPlaybackError("cannot make a buffer for ffmpeg's errors: errno \(errno)")
        }
        var arguments = ["-nostdin", "-v", "error"] + MediaProbe.protocols(for: url)
        if position > 0 { arguments += ["-ss", String(format: "%.3f", position)] }
        arguments += ["-i", MediaProbe.input(url), "-vn"]
        if speed != 1 { arguments += ["-af", Self.tempoFilter(speed)] }
        arguments += ["-f", "s16le", "-ac", "\(format.channels)", "-ar", "\(format.sampleRate)", "pipe:1"]
        let devNull = open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer { close(devNull) }
        do {
            process = try ChildProcess(executable: ffmpeg, arguments: arguments, standardInput: devNull, standardOutput: pipe[1], standardError: errors)
        } catch {
            close(pipe[0]); close(pipe[1]); close(errors)
            throw LocalPlaybackError("cannot start \(ffmpeg): \(error)")
        }
        close(pipe[1])
        output = pipe[0]
        self.errors = errors
        _ = fcntl(output, F_SETFL, fcntl(output, F_GETFL) | O_NONBLOCK)
    }

    /// ffmpeg's atempo takes 0.5...2 per stage: chain stages for the rest.
    static func tempoFilter(_ speed: Double) -> String {
        var stages: [String] = [], left = speed
        while left > 2 { stages.append("atempo=2.0"); left /= 2 }
        while left < 0.5 { stages.append("atempo=0.5"); left /= 0.5 }
        stages.append(String(format: "atempo=%.6f", left))
        return stages.joined(separator: ",")
    }

    /// Waits up to `milliseconds` for output; reads what is there into `buffer`. nil at end of output.
    func read(into buffer: UnsafeMutableRawBufferPointer, waitingUpTo milliseconds: Int32) -> Int? {
        var ready = pollfd(fd: output, events: Int16(POLLIN), revents: 0)
        guard poll(&ready, 1, milliseconds) > 0 else { return 0 }
        let n = Glibc.read(output, buffer.baseAddress, buffer.count)
        if n > 0 { return n }
        if n < 0, errno == EAGAIN || errno == EINTR { return 0 }
        return nil
    }

    /// After the end of output: nil if ffmpeg finished cleanly, else its last words.
    func failure() -> String? {
        let termination = process.waitForExit()
        guard termination != .exited(0) else { return nil }
        let size = lseek(errors, 0, SEEK_END)
        var text = [UInt8](repeating: 0, count: Int(min(max(size, 0), 16 * 1024)))
        _ = pread(errors, &text, text.count, max(0, size - off_t(text.count)))
        let line = String(decoding: text, as: UTF8.self).split(separator: "\n").last.map(String.init)
        return line ?? "ffmpeg \(termination)"
    }

    /// Stops ffmpeg by its PID and reaps it. Safe to call twice.
    func stop() {
        guard !stopped else { return }
        stopped = true
        process.signal(SIGKILL)
        _ = process.waitForExit()
        close(output)
        close(errors)
    }

    var pid: Int32 { process.pid }

    deinit { stop() }
}
