import Glibc
import MediaRouteIPC

/// The socket an interface's `M-SEARCH`es leave from, sent on by whichever thread searches: a
/// write handed to the channel's event loop waited for that thread to wake, a tenth of a
/// millisecond before the first search of a picker left. The channel reading the answers owns a
/// duplicate of the descriptor; this one closes when the last sender lets go of it, so a search
/// racing `close` never sends on a descriptor number reused meanwhile.
final class SSDPSearchSocket: Sendable {
    /// For the channel: the same socket, its own descriptor.
    let readingDescriptor: Int32
    private let fd: Int32
    private let group: sockaddr_in

    /// A socket bound to `address` (any port), multicasting out of that interface.
    init(address: in_addr, ip: String, group: sockaddr_in) throws(IPCSystemError) {
        let (fd, _) = try UDPSocket.bind(host: ip)
        // Answers are a few hundred bytes each: a quarter of a MiB holds a large LAN's burst, not
        // the seconds of video UDPSocket sizes its buffer for.
        var size: Int32 = 256 << 10
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        var interface = address
        guard setsockopt(fd, Int32(IPPROTO_IP), IP_MULTICAST_IF, &interface, socklen_t(MemoryLayout<in_addr>.size)) == 0 else {
            let error = IPCSystemError("multicast out of \(ip)")
            close(fd)
            throw error
        }
        let reading = fcntl(fd, F_DUPFD_CLOEXEC, 0)
        guard reading >= 0 else {
            let error = IPCSystemError("duplicate the search socket of \(ip)")
            close(fd)
            throw error
        }
        (self.fd, readingDescriptor, self.group) = (fd, reading, group)
    }

    /// Sends each datagram to the SSDP group now (non-blocking: one the kernel cannot take is
    /// lost, as UDP may lose it anyway, and the repeat follows).
    func send(_ datagrams: [[UInt8]]) {
        var group = group
        withUnsafePointer(to: &group) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                for datagram in datagrams {
                    _ = sendto(fd, datagram, datagram.count, Int32(MSG_NOSIGNAL), address, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
    }

    deinit { close(fd) }
}
