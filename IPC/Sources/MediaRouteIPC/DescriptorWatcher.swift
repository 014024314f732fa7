import CLinuxHelpers
import Glibc

/// Calls `onReadable` on the loop thread whenever a descriptor becomes readable (a pipe, a pidfd).
/// Owns the descriptor: `cancel()` stops watching and closes it.
public final class DescriptorWatcher: EventLoopIOHandler, @unchecked Sendable {
    public let fd: Int32
    private let loop: EventLoop
    private let onReadable: (DescriptorWatcher) -> Void
    private var isActive = true

    /// Must be created on the loop thread.
    public init(fd: Int32, loop: EventLoop, onReadable: @escaping (DescriptorWatcher) -> Void) throws(IPCSystemError) {
        self.fd = fd
        self.loop = loop
        self.onReadable = onReadable
        try loop.register(fd: fd, events: EPOLLIN.rawValue, handler: self)
    }

    public func handleIOEvents(_ events: UInt32) {
        if isActive { onReadable(self) }
    }

    /// Stops watching and closes the descriptor. Loop thread only; safe to call twice.
    public func cancel() {
        guard isActive else { return }
        isActive = false
        loop.deregister(fd: fd)
        close(fd)
    }
}

/// Splits what a pipe delivers into lines, for logging a child's output under its name.
public struct LineSplitter: Sendable {
    private var partial: [UInt8] = []
    /// A line longer than this is cut, so a child printing without newlines cannot grow memory.
    public static let maximumLineLength = 4096

    public init() {}

    /// Reads what is available from `fd` (non-blocking) and returns complete lines; `ended` is
    /// true at end of file, when the last partial line is returned too.
    public mutating func read(from fd: Int32) -> (lines: [String], ended: Bool) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = Glibc.read(fd, &buffer, buffer.count)
        if n < 0 { return ([], errno != EAGAIN && errno != EINTR) }
        if n == 0 {
            defer { partial.removeAll() }
            return (partial.isEmpty ? [] : [String(decoding: partial, as: UTF8.self)], true)
        }
        var lines: [String] = []
        for byte in buffer[0..<n] {
            if byte == 0x0A || partial.count >= Self.maximumLineLength {
                lines.append(String(decoding: partial, as: UTF8.self))
                partial.removeAll(keepingCapacity: true)
                if byte == 0x0A { continue }
            }
            partial.append(byte)
        }
        return (lines, false)
    }
}
