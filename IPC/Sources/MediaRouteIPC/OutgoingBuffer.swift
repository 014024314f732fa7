import DequeModule
import Glibc

/// Frames encoded and not yet written, with the descriptors that ride on their first bytes, and
/// who waits for room.
///
/// Owned by `Connection`, on its loop. Messages are encoded straight into one buffer so a burst
/// leaves in one `sendmsg`; the buffer's size is what bounds a connection's memory when its peer
/// reads slowly (IPC/README.md §9), so the accounting for that bound lives here too.
struct OutgoingBuffer {
    private let bytes = OutgoingBytes()
    private var sent = 0
    /// Duplicated descriptors to attach at `offset` (the first byte of their frame) in `bytes`.
    private var descriptors = Deque<(offset: Int, fds: [Int32])>()
    /// Bytes written since the connection opened: how a stall is told from a slow reader.
    private(set) var bytesWritten = 0
    /// Unsent bytes at which senders wait.
    let highWater: Int
    /// Senders of requests and notifications waiting for the unsent output to drop below `highWater`.
    var spaceWaiters: [UnsafeContinuation<Void, Error>] = []
    /// Armed while the output is over `highWater`: a peer that takes none of it in time is dropped.
    var stallTimer: EventLoop.TimerHandle?

    init(highWater: Int) { self.highWater = highWater }

    var unsentByteCount: Int { bytes.count - sent }
    var isEmpty: Bool { bytes.count == 0 }
    var isFull: Bool { unsentByteCount >= highWater }
    /// Unsent output past which the connection is dropped: four times the bound at which senders wait.
    var hardLimit: Int { 4 * highWater }
    var isOverHardLimit: Bool { unsentByteCount > hardLimit }

    /// Encodes `message` as one frame. On failure nothing is added, and `descriptors` are closed
    /// if `owned` (an answer's); otherwise the caller's stay open and duplicates travel.
    mutating func append(_ message: Message, descriptors: [Int32], owned: Bool, frameLimit: Int, peer: String) throws(RPCError) {
        if descriptors.count > Message.maximumDescriptorsPerFrame {
            if owned { descriptors.forEach { _ = Glibc.close($0) } }
            throw RPCError(.descriptorMismatch, "a message may carry at most \(Message.maximumDescriptorsPerFrame) file descriptors, not \(descriptors.count)")
        }
        let start = bytes.count
        var output = bytes
        for _ in 0..<FrameDecoder.headerLength { output.write(0) }  // the length, written below
        message.encode(to: &output)
        let length = bytes.count - start - FrameDecoder.headerLength
        guard length <= frameLimit else {
            bytes.truncate(to: start)
            if owned { descriptors.forEach { _ = Glibc.close($0) } }
            throw RPCError(.messageTooLarge, "a message of \(length) bytes is over the \(frameLimit)-byte frame limit agreed with \(peer); pass bulk data through a shared-memory ring or split it")
        }
        bytes.set(UInt8(truncatingIfNeeded: length >> 24), at: start)
        bytes.set(UInt8(truncatingIfNeeded: length >> 16), at: start + 1)
        bytes.set(UInt8(truncatingIfNeeded: length >> 8), at: start + 2)
        bytes.set(UInt8(truncatingIfNeeded: length), at: start + 3)
        guard !descriptors.isEmpty else { return }
        if owned {
            self.descriptors.append((offset: start, fds: descriptors))
            return
        }
        var duplicates: [Int32] = []
        for descriptor in descriptors {
            let copy = fcntl(descriptor, F_DUPFD_CLOEXEC, 0)
            guard copy >= 0 else {
                let error = IPCSystemError("fcntl(F_DUPFD_CLOEXEC) on descriptor \(descriptor)")
                duplicates.forEach { _ = Glibc.close($0) }
                bytes.truncate(to: start)
                throw RPCError(.descriptorMismatch, "cannot pass descriptor \(descriptor): \(error)")
            }
            duplicates.append(copy)
        }
        self.descriptors.append((offset: start, fds: duplicates))
    }

    /// Writes as much as the socket takes, each frame's descriptors with its first byte.
    /// True when everything went (the buffer is then empty), false when the socket is full.
    mutating func write(to fd: Int32) throws(IPCSystemError) -> Bool {
        while sent < bytes.count {
            var end = bytes.count
            var attached: [Int32] = []
            if let first = descriptors.first {
                if first.offset == sent {
                    attached = first.fds
                    if descriptors.count > 1 { end = descriptors[1].offset }
                } else {
                    end = first.offset  // stop so the next descriptors ride on their own frame's first byte
                }
            }
            guard let written = try UnixSocket.send(fd, bytes.bytes(sent, end), descriptors: attached) else { return false }
            if !attached.isEmpty && written > 0 {
                attached.forEach { _ = Glibc.close($0) }
                descriptors.removeFirst()
            }
            sent += written
            bytesWritten += written
        }
        bytes.removeAll()
        sent = 0
        return true
    }

    /// The senders waiting for room, to resume: there is room now, or there never will be.
    mutating func takeSpaceWaiters() -> [UnsafeContinuation<Void, Error>] {
        defer { spaceWaiters.removeAll() }
        return spaceWaiters
    }

    /// Drops what was not sent and closes its descriptors: the connection closed.
    mutating func discard() {
        descriptors.forEach { $0.fds.forEach { _ = Glibc.close($0) } }
        descriptors.removeAll()
        bytes.removeAll()
        sent = 0
    }
}
