import CLinuxHelpers
import Glibc

/// UDP for real-time media (RTP): IPv4, close-on-exec, non-blocking.
public enum UDPSocket {
    /// A socket connected to `host:port`, to `send` datagrams to it.
    public static func connect(host: String, port: UInt16) throws(IPCSystemError) -> Int32 {
        var address = try sockaddr_in(numericHost: host, port: port, for: "UDP \(host)")  // before the socket: a bad host leaks nothing
        let fd = try make()
        let rc = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard rc == 0 else {
            let error = IPCSystemError("connect UDP \(host):\(port)")
            close(fd)
            throw error
        }
        var size: Int32 = 1 << 20  // room for a keyframe's burst of packets
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        return fd
    }

    /// A socket bound to `host` and `port` (0: a free one); returns it and the port.
    public static func bind(host: String, port: UInt16 = 0) throws(IPCSystemError) -> (Int32, UInt16) {
        var address = try sockaddr_in(numericHost: host, port: port, for: "UDP \(host)")
        let fd = try make()
        let rc = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard rc == 0, let local = TCPSocket.address(of: fd, peer: false) else {
            let error = IPCSystemError("bind UDP \(host):\(port)")
            close(fd)
            throw error
        }
        var size: Int32 = 4 << 20  // a few seconds of video, should the reader fall behind for a moment
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        return (fd, local.port)
    }

    /// Sends one datagram on a connected socket; false if it was dropped (the buffer was full, or
    /// nobody listens: UDP is allowed to lose things).
    @discardableResult
    public static func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        Glibc.send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL)) == bytes.count
    }

    private static func make() throws(IPCSystemError) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw IPCSystemError("socket(UDP)") }
        return fd
    }
}

/// Hands every datagram arriving on a bound UDP socket to `onDatagram`, on the event loop thread.
/// Owns the socket (closed on a failed `init` too): `close()` stops and closes it.
public final class DatagramReceiver: EventLoopIOHandler, @unchecked Sendable {
    public let fd: Int32
    private let loop: EventLoop
    private let onDatagram: (UnsafeRawBufferPointer) -> Void
    private let source: in_addr?
    private var buffer = [UInt8](repeating: 0, count: 65536)
    private var open = true
    /// Datagrams dropped because they came from another host than `onlyFrom`.
    public private(set) var strangers = 0

    /// Must be created on the loop thread. With `onlyFrom` (a numeric IPv4 address), datagrams
    /// from any other host are dropped unread: a media port must not take packets from anyone.
    public init(fd: Int32, loop: EventLoop, onlyFrom host: String? = nil, onDatagram: @escaping (UnsafeRawBufferPointer) -> Void) throws(IPCSystemError) {
        self.fd = fd
        self.loop = loop
        self.onDatagram = onDatagram
        do {
            source = try host.map { host throws(IPCSystemError) in try sockaddr_in(numericHost: host, port: 0, for: "UDP \(host)").sin_addr }
            try loop.register(fd: fd, events: EPOLLIN.rawValue, handler: self)
        } catch {
            Glibc.close(fd)
            throw error
        }
    }

    public func handleIOEvents(_ events: UInt32) {
        // A bounded batch per wake-up, so one busy stream cannot starve the loop.
        var from = sockaddr_in()
        for _ in 0..<256 where open {
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let n = withUnsafeMutablePointer(to: &from) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, &buffer, buffer.count, 0, $0, &length) }
            }
            guard n > 0 else { return }
            if let source, from.sin_addr.s_addr != source.s_addr {
                strangers += 1
                continue
            }
            buffer.withUnsafeBytes { onDatagram(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
        }
    }

    /// Loop thread only; safe to call twice.
    public func close() {
        guard open else { return }
        open = false
        loop.deregister(fd: fd)
        Glibc.close(fd)
    }
}
