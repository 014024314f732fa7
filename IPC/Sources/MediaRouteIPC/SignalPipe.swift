import CLinuxHelpers
import Glibc

/// Signals (SIGTERM, SIGINT) as a readable pipe, so a program can wait for them like any event.
///
/// The handlers are installed before `init` returns: a Dispatch signal source registers its handler
/// asynchronously, so a signal sent right after start could be ignored or kill the process.
/// One per process: every signal goes to the pipe of the last one made.
public final class SignalPipe: Sendable {
    /// Readable once one of the signals arrived (one byte per signal: its number).
    public let fd: Int32
    private let writeEnd: Int32
    private let signals: [Int32]

    public init(_ signals: [Int32]) {
        var ends: [Int32] = [-1, -1]
        if clh_pipe_cloexec(&ends) != 0 { ends = [-1, -1] }
        fd = ends[0]
        writeEnd = ends[1]
        self.signals = signals
        _ = fcntl(writeEnd, F_SETFL, O_NONBLOCK)
        for signal in signals { _ = clh_signal_to_pipe(signal, writeEnd) }
    }

    /// Waits for the next signal and returns its number.
    public func next(loop: EventLoop = .shared) async -> Int32 {
        let readEnd = dup(fd)  // the watcher closes its descriptor when done
        return await withCheckedContinuation { continuation in
            loop.execute {
                do {
                    _ = try DescriptorWatcher(fd: readEnd, loop: loop) { watcher in
                        var byte: UInt8 = 0
                        guard read(watcher.fd, &byte, 1) == 1 else { return }
                        watcher.cancel()
                        continuation.resume(returning: Int32(byte))
                    }
                } catch {
                    close(readEnd)
                    continuation.resume(returning: 0)
                }
            }
        }
    }

    /// The signals get their default action again.
    public func restore() {
        for number in signals { signal(number, SIG_DFL) }
        close(fd)
        close(writeEnd)
    }
}
