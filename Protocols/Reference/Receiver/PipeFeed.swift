import CLinuxHelpers
import Glibc
import MediaRouteIPC

/// Feeds a child's standard input from the event loop without ever blocking it: the pipe is
/// non-blocking, and what it does not take at once waits in a queue of at most `limit` bytes,
/// written as the child reads. A chunk begun is always finished, so the child never sees one cut
/// in the middle. A child that goes away makes writes fail with EPIPE (the event loop ignores
/// SIGPIPE, so that never kills the receiver); the feed then stops (the child's end says why).
final class PipeFeed: EventLoopIOHandler, @unchecked Sendable {  // used on the event loop only, which the compiler cannot see
    enum Outcome {
        /// Written, or queued to be.
        case taken
        /// The queue has no room for it: nothing was queued.
        case full
        /// The pipe is closed or broken.
        case closed
    }

    private var fd: Int32
    private let loop: EventLoop
    private let limit: Int
    /// Chunks waiting, from `head` on; `offset` bytes of the first are written.
    private var queue: [[UInt8]] = []
    private var head = 0
    private var offset = 0
    /// Bytes waiting to be written.
    private(set) var queued = 0
    private var watchingWritable = false

    /// Takes `fd`, the pipe's write end (closed by `close()` or when the pipe breaks).
    init(fd: Int32, loop: EventLoop, limit: Int) throws(IPCSystemError) {
        self.fd = fd
        self.loop = loop
        self.limit = limit
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        // No events asked for until something waits; a broken pipe (EPOLLERR) is reported anyway.
        try loop.register(fd: fd, events: 0, handler: self)
    }

    var isOpen: Bool { fd >= 0 }

    /// Writes `chunk`, or queues it if the pipe is full and the queue has room for it.
    func write(_ chunk: [UInt8]) -> Outcome {
        guard isOpen else { return .closed }
        guard !chunk.isEmpty else { return .taken }
        if head == queue.count {
            guard let written = writeSome(chunk, from: 0) else { return .closed }
            if written == chunk.count { return .taken }
            enqueue(chunk)
            offset = written
            queued -= written
            setWatching(true)
            return .taken
        }
        guard queued + chunk.count <= limit else { return .full }
        enqueue(chunk)
        return .taken
    }

    /// Drops every chunk waiting except the rest of one begun; returns the bytes dropped.
    @discardableResult
    func dropQueued() -> Int {
        guard head < queue.count else { return 0 }
        let kept = queue[head].count - offset
        let dropped = queued - kept
        queue.removeSubrange((head + 1)...)
        queued = kept
        return dropped
    }

    /// Stops feeding and closes the write end (the child reads the end of its input). Safe to call twice.
    func close() {
        guard isOpen else { return }
        loop.deregister(fd: fd)
        Glibc.close(fd)
        fd = -1
        watchingWritable = false
        queue.removeAll()
        (head, offset, queued) = (0, 0, 0)
    }

    func handleIOEvents(_ events: UInt32) {
        guard isOpen else { return }
        if events & (EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0 { return close() }
        drain()
    }

    private func enqueue(_ chunk: [UInt8]) {
        if head > 64 && head * 2 > queue.count {
            queue.removeFirst(head)
            head = 0
        }
        queue.append(chunk)
        queued += chunk.count
    }

    /// Writes what waits until the pipe is full or the queue empty.
    private func drain() {
        while head < queue.count {
            guard let written = writeSome(queue[head], from: offset) else { return }
            offset += written
            queued -= written
            guard offset == queue[head].count else { return }
            head += 1
            offset = 0
        }
        queue.removeAll(keepingCapacity: true)
        head = 0
        setWatching(false)
    }

    /// Writes what the pipe takes of `bytes` from `start`: the count (0 when full), nil when it broke.
    private func writeSome(_ bytes: [UInt8], from start: Int) -> Int? {
        while true {
            let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + start, $0.count - start) }
            if written >= 0 { return written }
            if errno == EINTR { continue }
            if errno == EAGAIN { return 0 }
            close()
            return nil
        }
    }

    private func setWatching(_ on: Bool) {
        guard on != watchingWritable, isOpen else { return }
        watchingWritable = on
        loop.setEvents(fd: fd, events: on ? EPOLLOUT.rawValue : 0)
    }
}
