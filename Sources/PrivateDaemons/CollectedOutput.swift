import CLinuxHelpers
import Glibc
import MediaRouteIPC
import Synchronization

/// What a long-running child prints, kept in memory (no log file to clean up) and read on the event
/// loop as it comes, so the child never blocks on a full pipe. Several children in turn (a daemon
/// and its restarts) can write to the same collection.
final class CollectedOutput: Sendable {
    private let state = Mutex(State())
    private static let limit = 1 << 20

    private struct State {
        var bytes: [UInt8] = []
        /// Bytes ever collected, dropped ones included: marks stay valid when old output is dropped.
        var total = 0
        var openPipes = 0
    }

    /// Everything collected so far (the last megabyte of it).
    var text: String { state.withLock { String(decoding: $0.bytes, as: UTF8.self) } }

    /// Where the output ends now: `text(after:)` gives only what comes after it.
    var mark: Int { state.withLock { $0.total } }

    /// What was collected after `mark`.
    func text(after mark: Int) -> String {
        state.withLock { state in
            let newer = max(0, min(state.bytes.count, state.total - mark))
            return String(decoding: state.bytes.suffix(newer), as: UTF8.self)
        }
    }

    /// Whether every pipe handed out has reached its end (all writers have exited).
    var allEnded: Bool { state.withLock { $0.openPipes == 0 } }

    /// A new pipe drained into this collection: give the returned write end to a child as its
    /// standard output and error, then close it.
    func pipe() throws -> Int32 {
        var ends: [Int32] = [-1, -1]
        guard clh_pipe_cloexec(&ends) == 0 else { throw PrivateDaemonError("cannot make a pipe for a child's output: errno \(errno)") }
        let readEnd = ends[0]
        _ = fcntl(readEnd, F_SETFL, O_NONBLOCK)
        state.withLock { $0.openPipes += 1 }
        let loop = EventLoop.shared
        loop.execute {
            do {
                _ = try DescriptorWatcher(fd: readEnd, loop: loop) { watcher in self.drain(watcher) }
            } catch {
                close(readEnd)
                self.state.withLock { $0.openPipes -= 1 }
            }
        }
        return ends[1]
    }

    private func drain(_ watcher: DescriptorWatcher) {
        var buffer = [UInt8](repeating: 0, count: 16384)
        while true {
            let count = read(watcher.fd, &buffer, buffer.count)
            if count > 0 {
                state.withLock { state in
                    state.bytes += buffer[0..<count]
                    state.total += count
                    if state.bytes.count > 2 * Self.limit { state.bytes.removeFirst(state.bytes.count - Self.limit) }
                }
                continue
            }
            if count < 0 && (errno == EAGAIN || errno == EINTR) { return }
            watcher.cancel()
            state.withLock { $0.openPipes -= 1 }
            return
        }
    }
}
