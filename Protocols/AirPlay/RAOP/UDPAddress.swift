import Glibc

/// A numeric IPv4 or IPv6 address and port as the kernel takes it, and the UDP sockets of a stream
/// made with it: the audio socket, connected to the receiver's audio port, and the control socket,
/// which sends sync packets to the receiver's control port and reads its resend requests.
struct UDPAddress: Sendable {
    private var storage = sockaddr_storage()
    private(set) var length: socklen_t = 0

    /// Nil unless `host` is a numeric address (the RTSP connection's own ends are).
    init?(host: String, port: Int) {
        var hints = addrinfo()
        hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        guard (0...65535).contains(port), getaddrinfo(host, String(port), &hints, &found) == 0, let first = found else { return nil }
        defer { freeaddrinfo(found) }
        withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: UnsafeRawBufferPointer(start: first.pointee.ai_addr, count: Int(first.pointee.ai_addrlen))) }
        length = first.pointee.ai_addrlen
    }

    var family: Int32 { Int32(storage.ss_family) }

    /// A non-blocking UDP socket bound to this address; connected to `peer` if given.
    func bindSocket(connectedTo peer: UDPAddress? = nil) throws(RAOPError) -> Int32 {
        let fd = socket(family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw RAOPError(.connectionFailed, "cannot open a UDP socket: \(String(cString: strerror(errno)))") }
        let bound = withSocketAddress { Glibc.bind(fd, $0, length) } == 0
        let connected = bound && (peer?.withSocketAddress { Glibc.connect(fd, $0, peer!.length) } ?? 0) == 0
        guard bound, connected else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw RAOPError(.connectionFailed, bound ? "cannot reach the receiver's audio port over UDP: \(reason)" : "cannot bind a UDP socket for the stream: \(reason)")
        }
        return fd
    }

    /// The port `fd` is bound to.
    static func localPort(of fd: Int32) -> Int {
        var local = sockaddr_storage(), size = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &size) } }
        guard rc == 0 else { return 0 }
        return withUnsafeBytes(of: &local) { bytes in
            // sin_port and sin6_port sit at the same offset, in network order.
            Int(UInt16(bigEndian: bytes.load(fromByteOffset: 2, as: UInt16.self)))
        }
    }

    /// Sends `bytes` to this address from `fd` (losing it is UDP's right).
    func send(_ bytes: [UInt8], from fd: Int32) {
        _ = withSocketAddress { address in sendto(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT), address, length) }
    }

    private func withSocketAddress<T>(_ body: (UnsafePointer<sockaddr>) -> T) -> T {
        withUnsafeBytes(of: storage) { body($0.baseAddress!.assumingMemoryBound(to: sockaddr.self)) }
    }
}
