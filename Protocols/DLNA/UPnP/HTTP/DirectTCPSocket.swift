import Glibc
import NIOCore

/// A TCP connection opened with plain system calls on the calling thread, for `HTTPClient` to
/// send its request from there before NIO takes the socket over to read the answer.
///
/// Why: NIO connects on its loop's thread, after a wake-up when called from another one, and its
/// connect runs a channel's whole set-up first; on a small busy machine that held a request
/// 200-300 µs, where a connect to a renderer on the LAN takes 50. A connect that completes within
/// the call (the peer close by) lets the request go out at once; one still under way is handed
/// to NIO as it is, which sends when it is up.
struct DirectTCPSocket: ~Copyable {
    /// The descriptor, owned until `take()`.
    private var descriptor: CInt
    /// Whether the connection was up when `open` returned.
    let isUp: Bool

    enum Opening: ~Copyable {
        case opened(DirectTCPSocket)
        /// The connect failed at once: the errno (ECONNREFUSED, ENETUNREACH...).
        case failed(CInt)
    }

    private init(descriptor: CInt, isUp: Bool) {
        (self.descriptor, self.isUp) = (descriptor, isUp)
    }

    /// Opens a non-blocking connection to `address` (Nagle off, as for every request-answer exchange).
    static func open(to address: SocketAddress) -> Opening {
        let family: CInt = switch address {
        case .v4: AF_INET
        case .v6: AF_INET6
        case .unixDomainSocket: AF_UNIX
        }
        let fd = socket(family, CInt(SOCK_STREAM.rawValue) | CInt(SOCK_NONBLOCK.rawValue) | CInt(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .failed(errno) }
        var on: CInt = 1
        _ = setsockopt(fd, CInt(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<CInt>.size))
        let result = address.withSockAddr { pointer, length in connect(fd, pointer, socklen_t(length)) }
        let error = result == 0 ? 0 : errno
        guard error == 0 || error == EINPROGRESS else {
            close(fd)
            return .failed(error)
        }
        // On a LAN close by, the handshake is done by the time connect returns, or refused.
        var poll = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        guard error == EINPROGRESS, Glibc.poll(&poll, 1, 0) == 1 else {
            return .opened(DirectTCPSocket(descriptor: fd, isUp: error == 0))
        }
        var failure: CInt = 0
        var length = socklen_t(MemoryLayout<CInt>.size)
        _ = getsockopt(fd, SOL_SOCKET, SO_ERROR, &failure, &length)
        guard failure == 0 else {
            close(fd)
            return .failed(failure)
        }
        return .opened(DirectTCPSocket(descriptor: fd, isUp: true))
    }

    /// Sends as much of `bytes` as the socket takes now; returns how much that was (0 when it is not up).
    func send(_ bytes: [UInt8]) -> Int {
        guard isUp else { return 0 }
        var sent = 0
        while sent < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress! + sent, $0.count - sent, CInt(MSG_NOSIGNAL)) }
            if count > 0 { sent += count } else if count < 0 && errno == EINTR { continue } else { break }
        }
        return sent
    }

    /// Whether the server closed it, or anything else came from it unasked (a server says nothing
    /// before a request): a connection kept for a later request is then not used.
    var isSpoiled: Bool {
        var poll = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return Glibc.poll(&poll, 1, 0) != 0
    }

    /// The descriptor, now the caller's to close (NIO's once it adopts it).
    consuming func take() -> CInt {
        let fd = descriptor
        discard self
        return fd
    }

    deinit { close(descriptor) }
}
