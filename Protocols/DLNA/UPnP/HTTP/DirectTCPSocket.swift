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

    enum Opening: ~Copyable {
        case opened(DirectTCPSocket)
        /// The connect failed at once: the errno (ECONNREFUSED, ENETUNREACH...).
        case failed(CInt)
    }

    enum Sending {
        /// How many bytes the socket took (fewer than all when its buffer filled).
        case sent(Int)
        /// The connect is still under way: nothing was sent.
        case connecting
        /// The connect failed (the errno: ECONNREFUSED, ETIMEDOUT...), or the connection did.
        case failed(CInt)
    }

    private init(descriptor: CInt) {
        self.descriptor = descriptor
    }

    /// Starts a non-blocking connection to `address` (Nagle off, as for every request-answer
    /// exchange); a refusal shows when something is sent.
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
        return .opened(DirectTCPSocket(descriptor: fd))
    }

    /// Sends as much of `bytes` as the socket takes now. On a LAN close by the handshake is
    /// done by the time `open` returns (or by the time this is called, for a connection opened
    /// ahead); elsewhere the connect may still be under way, and nothing is sent.
    func send(_ bytes: [UInt8]) -> Sending {
        var sent = 0
        while sent < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress! + sent, $0.count - sent, CInt(MSG_NOSIGNAL)) }
            if count > 0 {
                sent += count
                continue
            }
            let error = errno
            if count < 0 && error == EINTR { continue }
            // Before the first byte, the kernel answers EAGAIN while connecting, and the
            // connect's own error (taken off the socket) when it failed.
            if sent > 0 || (count < 0 && (error == EAGAIN || error == EWOULDBLOCK)) { break }
            return .failed(count < 0 ? error : EPIPE)
        }
        return sent == 0 && !bytes.isEmpty ? .connecting : .sent(sent)
    }

    /// Whether the server closed it, or anything else came from it unasked (a server says nothing
    /// before a request), or its connect failed: a connection kept for a later request is then
    /// not used.
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
