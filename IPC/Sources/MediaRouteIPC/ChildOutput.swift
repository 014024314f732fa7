import CLinuxHelpers
import Glibc
import Synchronization

/// What a finished child printed, and how it ended.
public struct ChildOutput: Sendable {
    public let termination: ChildProcess.Termination
    public let standardOutput: String
    public let standardError: String

    /// Runs `executable` to the end, collecting its output on the event loop (so a chatty child
    /// never blocks on a full pipe). Its standard input is /dev/null. Of each stream only the last
    /// `outputLimit` bytes are kept; a child still running after `timeout` is killed (its
    /// termination then says so).
    public static func run(_ executable: String, _ arguments: [String], environment: [String]? = nil, outputLimit: Int = 1 << 20,
                           timeout: Duration? = nil, loop: EventLoop = .shared) async throws(IPCSystemError) -> ChildOutput {
        var out: [Int32] = [-1, -1], err: [Int32] = [-1, -1]
        guard clh_pipe_cloexec(&out) == 0 else { throw IPCSystemError("pipe2") }
        guard clh_pipe_cloexec(&err) == 0 else {
            close(out[0]); close(out[1])
            throw IPCSystemError("pipe2")
        }
        func closePipes() { (out + err).forEach { _ = close($0) } }
        let devNull = open("/dev/null", O_RDONLY | O_CLOEXEC)
        guard devNull >= 0 else {
            let error = IPCSystemError("open /dev/null")
            closePipes()
            throw error
        }
        defer { close(devNull) }
        let child: ChildProcess
        do {
            child = try ChildProcess(executable: executable, arguments: arguments, environment: environment,
                                     standardInput: devNull, standardOutput: out[1], standardError: err[1])
        } catch {
            closePipes()
            throw error
        }
        close(out[1])
        close(err[1])
        async let stdout = drain(out[0], limit: outputLimit, loop: loop)
        async let stderr = drain(err[0], limit: outputLimit, loop: loop)
        let deadline = timeout.map { LoopDeadline(after: $0, on: loop) { child.signal(SIGKILL) } }
        let termination = await child.exitStatus(loop: loop)
        deadline?.cancel()
        return ChildOutput(termination: termination, standardOutput: await stdout, standardError: await stderr)
    }

    /// Reads a pipe to its end, on the loop.
    private static func drain(_ fd: Int32, limit: Int, loop: EventLoop) async -> String {
        _ = fcntl(fd, F_SETFL, O_NONBLOCK)
        let bytes: [UInt8] = await withCheckedContinuation { continuation in
            loop.execute {
                var collected: [UInt8] = []
                do {
                    _ = try DescriptorWatcher(fd: fd, loop: loop) { watcher in
                        var buffer = [UInt8](repeating: 0, count: 16384)
                        while true {
                            let n = read(watcher.fd, &buffer, buffer.count)
                            if n > 0 {
                                collected += buffer[0..<n]
                                if collected.count > 2 * limit { collected.removeFirst(collected.count - limit) }
                                continue
                            }
                            if n < 0 && (errno == EAGAIN || errno == EINTR) { return }
                            watcher.cancel()
                            continuation.resume(returning: collected)
                            return
                        }
                    }
                } catch {
                    close(fd)
                    continuation.resume(returning: [])
                }
            }
        }
        return String(decoding: bytes.suffix(limit), as: UTF8.self)
    }
}

/// An action once a time is up, timed by the event loop: a task sleeping on the cooperative pool
/// can wake seconds late when the pool is busy (seen under a full test suite), and a child's
/// deadline must hold then too.
private final class LoopDeadline: Sendable {
    private let loop: EventLoop
    private let state = Mutex<(timer: EventLoop.TimerHandle?, cancelled: Bool)>((nil, false))

    init(after delay: Duration, on loop: EventLoop, _ action: @escaping @Sendable () -> Void) {
        self.loop = loop
        loop.execute { [self] in
            guard !state.withLock({ $0.cancelled }) else { return }
            let timer = loop.schedule(after: delay, action)
            state.withLock { $0.timer = timer }
        }
    }

    func cancel() {
        loop.execute { [self] in
            let timer = state.withLock { state in
                state.cancelled = true
                return state.timer
            }
            if let timer { loop.cancelTimer(timer) }
        }
    }
}
