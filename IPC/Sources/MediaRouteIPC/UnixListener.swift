import CLinuxHelpers
import Glibc

/// A listening Unix socket on the event loop: accepts connections from processes of the same user
/// (or root) and hands each accepted socket to `onAccept`, on the loop thread.
///
/// The directory is created 0700 and the socket 0600: the file system and `SO_PEERCRED` both keep
/// other users out.
public final class UnixListener: EventLoopIOHandler, @unchecked Sendable {
    public let path: String
    public let loop: EventLoop
    private let fd: Int32
    private let onAccept: @Sendable (Int32, _ peer: PeerCredentials) -> Void
    private let onRefused: @Sendable (String) -> Void

    /// Binds `path` (replacing a stale socket file) and starts accepting on `loop`.
    public init(path: String, loop: EventLoop = .shared, onRefused: @escaping @Sendable (String) -> Void = { _ in },
                onAccept: @escaping @Sendable (Int32, PeerCredentials) -> Void) async throws(IPCSystemError) {
        self.path = path
        self.loop = loop
        self.onAccept = onAccept
        self.onRefused = onRefused
        let directory = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
        if !directory.isEmpty {
            if mkdir(directory, 0o700) != 0 && errno != EEXIST { throw IPCSystemError("mkdir \(directory)") }
            _ = chmod(directory, 0o700)
        }
        var (fd, address, length) = try UnixSocket.socketAndAddress(path, flags: Int32(SOCK_NONBLOCK.rawValue))
        self.fd = fd
        if UnixSocket.isStaleSocket(path) { unlink(path) }
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        guard bound == 0 else {
            let error = IPCSystemError("bind \(path)")
            Glibc.close(fd)
            throw error
        }
        _ = chmod(path, 0o600)
        guard listen(fd, 64) == 0 else { throw IPCSystemError("listen \(path)") }
        let listener = self
        let result: Result<Void, IPCSystemError> = await withCheckedContinuation { continuation in
            loop.execute {
                continuation.resume(returning: Result { () throws(IPCSystemError) in
                    try listener.loop.register(fd: listener.fd, events: EPOLLIN.rawValue, handler: listener)
                })
            }
        }
        try result.get()
    }

    public func handleIOEvents(_ events: UInt32) {
        while true {
            let client = clh_accept(fd)
            guard client >= 0 else { return }
            var uid: uid_t = 0, pid: pid_t = 0
            guard clh_peer_credentials(client, &uid, &pid) == 0, uid == getuid() || uid == 0 else {
                onRefused("refused a connection from uid \(uid) (pid \(pid)): only uid \(getuid()) and root may connect")
                Glibc.close(client)
                continue
            }
            onAccept(client, PeerCredentials(pid: pid, uid: uid))
        }
    }

    /// Turns an accepted peer away before its handshake: one error response (`id` null) saying
    /// why, then the socket is closed (IPC/README.md §4). Nothing is read from the peer.
    public static func refuse(_ socket: Int32, with error: RPCError) {
        let frame = FrameEncoder.frame(Message.errorResponse(id: nil, error: error).encode())
        _ = frame.withUnsafeBytes { try? UnixSocket.send(socket, $0, descriptors: []) }
        Glibc.close(socket)
    }

    /// Stops accepting and removes the socket file.
    public func close() {
        loop.execute { [self] in
            loop.deregister(fd: fd)
            Glibc.close(fd)
            unlink(path)
        }
    }
}

/// Who connected, as the kernel vouches (`SO_PEERCRED`).
public struct PeerCredentials: Sendable {
    public let pid: pid_t
    public let uid: uid_t
}

extension UnixSocket {
    /// Connects to a listening socket at `path`; the error names the path and says whether nothing
    /// listens there or the file is missing.
    public static func connect(path: String) throws(IPCSystemError) -> Int32 {
        var (fd, address, length) = try socketAndAddress(path, flags: 0)
        let rc = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, length) } }
        guard rc == 0 else {
            let error = IPCSystemError("connect \(path)")
            Glibc.close(fd)
            throw error
        }
        return fd
    }

    /// A new close-on-exec stream socket and the address of `path`, ready to bind or connect.
    static func socketAndAddress(_ path: String, flags: Int32) throws(IPCSystemError) -> (Int32, sockaddr_un, socklen_t) {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | flags, 0)
        guard fd >= 0 else { throw IPCSystemError("socket") }
        var address = sockaddr_un()
        let length = clh_sockaddr_un(&address, path)
        guard length > 0 else {
            Glibc.close(fd)
            throw IPCSystemError("socket path \(path) (longer than 107 bytes)", errno: ENAMETOOLONG)
        }
        return (fd, address, socklen_t(length))
    }

    /// True if `path` is a socket file nobody listens on (left by a process that died).
    static func isStaleSocket(_ path: String) -> Bool {
        var status = stat()
        guard lstat(path, &status) == 0, status.st_mode & S_IFMT == S_IFSOCK else { return false }
        guard let fd = try? connect(path: path) else { return true }
        Glibc.close(fd)
        return false
    }
}
