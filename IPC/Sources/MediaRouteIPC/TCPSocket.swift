import CLinuxHelpers
import Glibc

/// TCP for protocols that reuse MediaRoute's framing on the network (the reference protocol):
/// IPv4 only, close-on-exec, Nagle off (every frame is a message someone waits for).
public enum TCPSocket {
    /// Connects to `host:port` (a numeric IPv4 address), giving up after `timeout`. The blocking
    /// wait runs on a thread of its own, never a cooperative one.
    public static func connect(host: String, port: UInt16, timeout: Duration) async throws(IPCSystemError) -> Int32 {
        let result: Result<Int32, IPCSystemError> = await withCheckedContinuation { continuation in
            let thread = ConnectThread(host: host, port: port, timeout: timeout) { continuation.resume(returning: $0) }
            thread.start()
        }
        return try result.get()
    }

    static func connectBlocking(host: String, port: UInt16, timeout: Duration) -> Result<Int32, IPCSystemError> {
        var address: sockaddr_in
        do { address = try sockaddr_in(numericHost: host, port: port, for: "connect \(host):\(port)") } catch { return .failure(error) }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { return .failure(IPCSystemError("socket")) }
        let rc = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        if rc != 0 && errno != EINPROGRESS {
            let error = IPCSystemError("connect \(host):\(port)")
            Glibc.close(fd)
            return .failure(error)
        }
        if rc != 0 {
            var ready = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            var waited: Int32
            repeat { waited = poll(&ready, 1, Int32(clamping: timeout.milliseconds)) }
            while waited < 0 && errno == EINTR
            var failure: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            if waited == 0 {
                failure = ETIMEDOUT
            } else if waited < 0 {
                failure = errno
            } else if getsockopt(fd, SOL_SOCKET, SO_ERROR, &failure, &length) != 0 {
                failure = errno
            }
            if failure != 0 {
                Glibc.close(fd)
                return .failure(IPCSystemError("connect \(host):\(port)", errno: failure))
            }
        }
        noDelay(fd)
        return .success(fd)
    }

    static func noDelay(_ fd: Int32) {
        var on: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
    }

    /// The numeric address and port of a connected or bound socket's peer (`peer`) or own end.
    public static func address(of fd: Int32, peer: Bool) -> (host: String, port: UInt16)? {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let rc = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { peer ? getpeername(fd, $0, &length) : getsockname(fd, $0, &length) }
        }
        guard rc == 0 else { return nil }
        var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
        inet_ntop(AF_INET, &address.sin_addr, &text, socklen_t(text.count))
        return (text.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }, UInt16(bigEndian: address.sin_port))
    }
}

/// One blocking connect on a thread of its own.
private final class ConnectThread: @unchecked Sendable {
    let host: String, port: UInt16, timeout: Duration
    let done: (Result<Int32, IPCSystemError>) -> Void
    init(host: String, port: UInt16, timeout: Duration, done: @escaping (Result<Int32, IPCSystemError>) -> Void) {
        (self.host, self.port, self.timeout, self.done) = (host, port, timeout, done)
    }

    func start() {
        var thread = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()
        let rc = pthread_create(&thread, nil, { context in
            let work = Unmanaged<ConnectThread>.fromOpaque(context!).takeRetainedValue()
            work.done(TCPSocket.connectBlocking(host: work.host, port: work.port, timeout: work.timeout))
            return nil
        }, context)
        if rc == 0 {
            pthread_detach(thread)
        } else {
            Unmanaged<ConnectThread>.fromOpaque(context).release()
            done(.failure(IPCSystemError("pthread_create", errno: rc)))
        }
    }
}

/// A listening TCP socket on the event loop, handing each accepted connection to `onAccept`.
public final class TCPListener: EventLoopIOHandler, @unchecked Sendable {
    public let port: UInt16
    public let loop: EventLoop
    private let fd: Int32
    private let onAccept: @Sendable (Int32, _ peer: String) -> Void
    // Loop-thread state:
    private var open = true
    private var pausedForDescriptors = false
    /// How long to stop accepting when the process is out of descriptors, rather than spin.
    static let descriptorPause: Duration = .milliseconds(100)

    /// Listens on `host` (numeric IPv4; 0.0.0.0 for every interface) and `port` (0 picks a free one).
    public init(host: String = "0.0.0.0", port: UInt16 = 0, loop: EventLoop = .shared,
                onAccept: @escaping @Sendable (Int32, String) -> Void) async throws(IPCSystemError) {
        self.loop = loop
        self.onAccept = onAccept
        var address = try sockaddr_in(numericHost: host, port: port, for: "listen on \(host)")
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw IPCSystemError("socket") }
        var on: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard bound == 0, listen(fd, 64) == 0, let local = TCPSocket.address(of: fd, peer: false) else {
            let error = IPCSystemError("listen on \(host):\(port)")
            Glibc.close(fd)
            throw error
        }
        self.fd = fd
        self.port = local.port
        let listener = self
        let result: Result<Void, IPCSystemError> = await withCheckedContinuation { continuation in
            loop.execute {
                continuation.resume(returning: Result { () throws(IPCSystemError) in
                    try loop.register(fd: fd, events: EPOLLIN.rawValue, handler: listener)
                })
            }
        }
        if case .failure = result { Glibc.close(fd) }
        try result.get()
    }

    public func handleIOEvents(_ events: UInt32) {
        while open {
            let client = clh_accept(fd)
            if client < 0 {
                // Out of descriptors: the pending connection stays readable, so stop listening a
                // moment instead of being woken for it again and again.
                if errno == EMFILE || errno == ENFILE { pauseAccepting() }
                return
            }
            TCPSocket.noDelay(client)
            let peer = TCPSocket.address(of: client, peer: true).map { "\($0.host):\($0.port)" } ?? "?"
            onAccept(client, peer)
        }
    }

    private func pauseAccepting() {
        guard !pausedForDescriptors else { return }
        pausedForDescriptors = true
        loop.setEvents(fd: fd, events: 0)
        _ = loop.schedule(after: Self.descriptorPause) { [self] in
            pausedForDescriptors = false
            if open { loop.setEvents(fd: fd, events: EPOLLIN.rawValue) }
        }
    }

    /// Stops accepting; safe to call twice.
    public func close() {
        loop.execute { [self] in
            guard open else { return }
            open = false
            loop.deregister(fd: fd)
            Glibc.close(fd)
        }
    }
}
