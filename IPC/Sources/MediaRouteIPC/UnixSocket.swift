import CLinuxHelpers
import Glibc

/// Unix-domain stream socket calls the connection needs, with descriptors passed as `SCM_RIGHTS`.
public enum UnixSocket {
    /// A connected pair of stream sockets, close-on-exec: one end for us, one for a child or peer.
    public static func pair() throws(IPCSystemError) -> (Int32, Int32) {
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
            throw IPCSystemError("socketpair")
        }
        return (fds[0], fds[1])
    }

    public static func setNonBlocking(_ fd: Int32) throws(IPCSystemError) {
        let flags = fcntl(fd, F_GETFL)
        guard flags >= 0, fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0 else { throw IPCSystemError("fcntl(O_NONBLOCK)") }
    }

    /// Writes `bytes` with one `sendmsg`, attaching `descriptors` to the first byte.
    /// Returns bytes written, or nil when the socket buffer is full.
    package static func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, descriptors: [Int32]) throws(IPCSystemError) -> Int? {
        var iov = iovec(iov_base: UnsafeMutableRawPointer(mutating: bytes.baseAddress), iov_len: bytes.count)
        var header = msghdr()
        let sent: Int = withUnsafeMutablePointer(to: &iov) { iovPointer in
            header.msg_iov = iovPointer
            header.msg_iovlen = 1
            guard !descriptors.isEmpty else { return Glibc.sendmsg(fd, &header, Int32(MSG_NOSIGNAL)) }
            let payload = descriptors.count * MemoryLayout<Int32>.size
            let space = clh_cmsg_space(payload)
            return withUnsafeTemporaryAllocation(byteCount: space, alignment: MemoryLayout<cmsghdr>.alignment) { control in
                control.initializeMemory(as: UInt8.self, repeating: 0)
                header.msg_control = control.baseAddress
                header.msg_controllen = space
                let cmsg = clh_cmsg_firsthdr(&header)!
                cmsg.pointee.cmsg_level = SOL_SOCKET
                cmsg.pointee.cmsg_type = Int32(SCM_RIGHTS)
                cmsg.pointee.cmsg_len = clh_cmsg_len(payload)
                descriptors.withUnsafeBytes { UnsafeMutableRawPointer(clh_cmsg_data(cmsg)).copyMemory(from: $0.baseAddress!, byteCount: payload) }
                return Glibc.sendmsg(fd, &header, Int32(MSG_NOSIGNAL))
            }
        }
        if sent >= 0 { return sent }
        if errno == EAGAIN || errno == EWOULDBLOCK { return nil }
        if errno == EINTR { return 0 }
        throw IPCSystemError("sendmsg")
    }

    /// Room for the kernel's own per-message maximum (SCM_MAX_FD = 253), so nothing is truncated
    /// silently; the protocol's lower limit is enforced above this layer with a clear error.
    static let controlCapacity = clh_cmsg_space(253 * MemoryLayout<Int32>.size)

    enum ReceiveResult {
        case data(count: Int, descriptors: [Int32], descriptorsTruncated: Bool)
        case wouldBlock
        case endOfStream
    }

    /// A connection's receive buffer and its room for ancillary data, allocated once.
    final class ReceiveBuffers {
        let data: UnsafeMutableRawBufferPointer
        let control: UnsafeMutableRawBufferPointer
        init(byteCount: Int) {
            data = .allocate(byteCount: byteCount, alignment: 16)
            control = .allocate(byteCount: UnixSocket.controlCapacity, alignment: 16)
        }
        deinit {
            data.deallocate()
            control.deallocate()
        }
    }

    /// One `recvmsg`; received descriptors are close-on-exec.
    static func receive(_ fd: Int32, into buffers: ReceiveBuffers) throws(IPCSystemError) -> ReceiveResult {
        let buffer = buffers.data, control = buffers.control
        var iov = iovec(iov_base: buffer.baseAddress, iov_len: buffer.count)
        var header = msghdr()
        let n: Int = withUnsafeMutablePointer(to: &iov) { iovPointer in
            header.msg_iov = iovPointer
            header.msg_iovlen = 1
            header.msg_control = control.baseAddress
            header.msg_controllen = control.count
            return Glibc.recvmsg(fd, &header, Int32(MSG_CMSG_CLOEXEC))
        }
        if n < 0 {
            if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return .wouldBlock }
            throw IPCSystemError("recvmsg")
        }
        var descriptors: [Int32] = []
        if header.msg_controllen > 0 {
            var cmsg = clh_cmsg_firsthdr(&header)
            while let c = cmsg {
                if c.pointee.cmsg_level == SOL_SOCKET && c.pointee.cmsg_type == Int32(SCM_RIGHTS) {
                    let count = (c.pointee.cmsg_len - clh_cmsg_len(0)) / MemoryLayout<Int32>.size
                    let data = UnsafeRawPointer(clh_cmsg_data(c)!)
                    for i in 0..<count { descriptors.append(data.loadUnaligned(fromByteOffset: i * 4, as: Int32.self)) }
                }
                cmsg = clh_cmsg_nxthdr(&header, c)
            }
        }
        let truncated = header.msg_flags & Int32(MSG_CTRUNC) != 0
        if n == 0 && descriptors.isEmpty { return .endOfStream }
        return .data(count: n, descriptors: descriptors, descriptorsTruncated: truncated)
    }
}
