import A2DP
import Glibc

/// A stand-in for a BlueZ transport: a connected SOCK_SEQPACKET socketpair, the sender writing
/// one end and the test reading the other as the sink would. Both ends closed on `close()`.
final class TransportPair {
    let sender: Int32
    private(set) var sink: Int32

    struct Arrival {
        var packet: A2DPMediaPacket
        /// CLOCK_MONOTONIC nanoseconds when the test read it.
        var at: UInt64
    }

    init() throws {
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
            throw A2DPError("socketpair failed: \(String(cString: strerror(errno)))")
        }
        (sender, sink) = (fds[0], fds[1])
    }

    deinit { close() }

    func close() {
        _ = Glibc.close(sender)
        closeSink()
    }

    /// The sink goes away (its end closed), as a headset switched off.
    func closeSink() {
        if sink >= 0 { _ = Glibc.close(sink) }
        sink = -1
    }

    /// The next packet, waiting at most `timeout` milliseconds; nil if none came.
    func receive(timeoutMilliseconds: Int32) throws -> Arrival? {
        var ready = pollfd(fd: sink, events: Int16(POLLIN), revents: 0)
        guard poll(&ready, 1, timeoutMilliseconds) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(sink, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        guard count > 0 else { return nil }
        let at = monotonicNow()
        return Arrival(packet: try A2DPMediaPacket(bytes: Array(buffer[0..<count])), at: at)
    }
}

func monotonicNow() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}
