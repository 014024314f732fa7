import CLinuxHelpers
import Glibc

/// Signals (SIGTERM, SIGINT) as a readable pipe, so a program can wait for them like any event.
///
/// The handlers are installed before `init` returns: a Dispatch signal source registers its handler
/// asynchronously, so a signal sent right after start could be ignored or kill the process.
/// One per process: every signal goes to the pipe of the last one made.
public final class SignalPipe: Sendable {
    /// Readable once one of the signals arrived (one byte per signal: its number). Non-blocking.
    public let fd: Int32
    private let writeEnd: Int32
    private let signals: [Int32]

    public init(_ signals: [Int32]) throws(IPCSystemError) {
        var ends: [Int32] = [-1, -1]
        guard clh_pipe_cloexec(&ends) == 0 else { throw IPCSystemError("pipe2 (for signals)") }
        fd = ends[0]
        writeEnd = ends[1]
        self.signals = signals
        _ = fcntl(fd, F_SETFL, O_NONBLOCK)
        _ = fcntl(writeEnd, F_SETFL, O_NONBLOCK)
        for signal in signals { _ = clh_signal_to_pipe(signal, writeEnd) }
    }

    /// Waits for the next signal and returns its number; nil if the task is cancelled or the pipe
    /// is closed (`restore`) first.
    public func next(loop: EventLoop = .shared) async -> Int32? {
        let readEnd = dup(fd)  // the watcher closes its descriptor when done
        guard readEnd >= 0 else { return nil }
        let waiter = SignalWaiter()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                loop.execute {
                    waiter.continuation = continuation
                    guard !waiter.cancelled else {
                        close(readEnd)
                        return waiter.finish(nil)
                    }
                    do {
                        waiter.watcher = try DescriptorWatcher(fd: readEnd, loop: loop) { watcher in
                            var byte: UInt8 = 0
                            let n = read(watcher.fd, &byte, 1)
                            if n < 0 && (errno == EAGAIN || errno == EINTR) { return }  // another waiter took it
                            waiter.finish(n == 1 ? Int32(byte) : nil)
                        }
                    } catch {
                        close(readEnd)
                        waiter.finish(nil)
                    }
                }
            }
        } onCancel: {
            loop.execute {
                waiter.cancelled = true
                waiter.finish(nil)
            }
        }
    }

    /// The signals get their default action again, and waiters get nil.
    public func restore() {
        for number in signals { signal(number, SIG_DFL) }
        close(fd)
        close(writeEnd)
    }
}

/// One `next()` call's state, on the event loop thread only.
private final class SignalWaiter: @unchecked Sendable {
    var continuation: CheckedContinuation<Int32?, Never>?
    var watcher: DescriptorWatcher?
    var cancelled = false

    func finish(_ signal: Int32?) {
        watcher?.cancel()
        watcher = nil
        continuation?.resume(returning: signal)
        continuation = nil
    }
}
