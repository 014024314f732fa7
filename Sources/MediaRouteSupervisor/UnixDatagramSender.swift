import Glibc

/// An unbound Unix datagram socket that sends to one address: a filesystem path, or an abstract
/// name (its bytes after a leading NUL). What sd_notify and journald's native protocol both need.
final class UnixDatagramSender: Sendable {
    /// The address's bytes, as they go in `sun_path`.
    let address: [UInt8]
    private let fd: Int32

    /// `address` must fit in `sun_path` (107 bytes); `sendBuffer` asks the kernel for that much room
    /// (capped by net.core.wmem_max).
    init?(address: [UInt8], sendBuffer: Int32? = nil) {
        guard !address.isEmpty, address.count < MemoryLayout.size(ofValue: sockaddr_un().sun_path) else { return nil }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        if var size = sendBuffer { _ = setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
        self.fd = fd
        self.address = address
    }

    deinit { close(fd) }

    /// Sends `bytes` as one datagram: nil when sent whole, else the errno (`EMSGSIZE` for one too
    /// large, `ENOENT` or `ECONNREFUSED` when nobody listens).
    func send(_ bytes: [UInt8]) -> Int32? {
        var storage = sockaddr_un()
        storage.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &storage.sun_path) { path in
            for (i, byte) in address.enumerated() { path[i] = byte }
        }
        // An abstract name's length is exact (no terminating NUL counted).
        let length = socklen_t(MemoryLayout<sa_family_t>.size + address.count)
        let sent = withUnsafePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bytes.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), socketAddress, length) }
            }
        }
        return sent == bytes.count ? nil : errno
    }
}
