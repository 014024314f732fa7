import DequeModule
import Glibc

/// What the peer sent and this side has not yet handled: bytes being split into frames, and the
/// descriptors that came with them, each waiting for the frame that claims it.
///
/// Owned by `Connection`, on its loop. Descriptors are matched to frames by stream offset (IPC/README.md
/// §5), so this keeps the offsets, and the deadline of a frame begun and not finished.
struct IncomingFrames {
    var decoder: FrameDecoder
    /// Descriptors received but not yet claimed by a frame, with the stream offset where the read
    /// that brought them ended: a frame starting before that offset must claim them.
    private var descriptors = Deque<(fd: Int32, arrivalEnd: Int)>()
    private var receivedOffset = 0
    /// The frame the peer began and has not finished, by its stream offset, and the timer that
    /// ends the connection if it stays unfinished (a peer may not pin a buffer by going quiet).
    var unfinishedFrame: (timer: EventLoop.TimerHandle, offset: Int)?

    init(maximumFrameLength: Int) {
        decoder = FrameDecoder(maximumFrameLength: maximumFrameLength)
    }

    /// Notes one read: how many bytes it brought (given to `decoder` next), and its descriptors.
    mutating func received(byteCount: Int, descriptors received: [Int32]) {
        receivedOffset += byteCount
        for descriptor in received { descriptors.append((fd: descriptor, arrivalEnd: receivedOffset)) }
    }

    /// Descriptors received and not yet claimed.
    var descriptorCount: Int { descriptors.count }

    /// Takes the next `count` descriptors, in arrival order, for the frame that names them.
    mutating func claimDescriptors(_ count: Int) -> [Int32] {
        var claimed: [Int32] = []
        claimed.reserveCapacity(count)
        for _ in 0..<count { claimed.append(descriptors.removeFirst().fd) }
        return claimed
    }

    /// Whether a descriptor arrived with bytes every frame of which is handled: no frame named it.
    var hasOrphanDescriptor: Bool {
        guard let oldest = descriptors.first else { return false }
        return oldest.arrivalEnd <= decoder.consumedOffset
    }

    /// Closes every descriptor not claimed: the connection closed.
    mutating func closeDescriptors() {
        descriptors.forEach { _ = Glibc.close($0.fd) }
        descriptors.removeAll()
    }
}
