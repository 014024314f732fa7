import Glibc

/// A child process, optionally given one end of a socketpair as descriptor 3, in its own process group.
///
/// Its own group lets the parent signal the child and anything it started at once, and keeps a
/// terminal's Ctrl-C from reaching it directly: the parent decides when children stop. The signal
/// mask and dispositions are reset, so a parent that blocks SIGTERM (test runners do) cannot leave
/// a child that ignores it.
public final class ChildProcess: Sendable {
    /// The descriptor number at which the child finds its socket.
    public static let socketDescriptor: Int32 = 3

    public let pid: pid_t
    public let executable: String

    /// Starts `executable` with `arguments`; `socket`, if given, becomes the child's descriptor 3, and
    /// `environment` (if given) replaces the inherited one. Standard output and error go to the
    /// given descriptors, else they are inherited.
    public init(executable: String, arguments: [String], socket: Int32? = nil, environment: [String]? = nil,
                standardOutput: Int32? = nil, standardError: Int32? = nil) throws(IPCSystemError) {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // dup2 clears close-on-exec on the new descriptor; a socket already at 3 needs no dup.
        if let socket, socket != Self.socketDescriptor {
            posix_spawn_file_actions_adddup2(&actions, socket, Self.socketDescriptor)
        } else if let socket {
            let flags = fcntl(socket, F_GETFD)
            _ = fcntl(socket, F_SETFD, flags & ~FD_CLOEXEC)
        }
        if let standardOutput { posix_spawn_file_actions_adddup2(&actions, standardOutput, 1) }
        if let standardError { posix_spawn_file_actions_adddup2(&actions, standardError, 2) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setpgroup(&attributes, 0)
        var defaultSignals = sigset_t()
        sigfillset(&defaultSignals)
        posix_spawnattr_setsigdefault(&attributes, &defaultSignals)
        var emptyMask = sigset_t()
        sigemptyset(&emptyMask)
        posix_spawnattr_setsigmask(&attributes, &emptyMask)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let envStrings = (environment ?? Self.currentEnvironment()).map { strdup($0) } + [nil]
        defer { envStrings.forEach { free($0) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, executable, &actions, &attributes, argv, envStrings)
        guard rc == 0 else { throw IPCSystemError("posix_spawn \(executable)", errno: rc) }
        self.pid = pid
        self.executable = executable
    }

    private static func currentEnvironment() -> [String] {
        var result: [String] = []
        var pointer = environ
        while let entry = pointer.pointee {
            result.append(String(cString: entry))
            pointer += 1
        }
        return result
    }

    /// Sends `signal` to the child's whole process group.
    public func signal(_ signal: Int32) {
        _ = kill(-pid, signal)
    }

    /// How a child ended.
    public enum Termination: Sendable, Equatable, CustomStringConvertible {
        case exited(Int32)
        case signalled(Int32)
        public var description: String {
            switch self {
            case .exited(let code): "exited with status \(code)"
            case .signalled(let signal): "killed by signal \(signal) (\(String(cString: strsignal(signal))))"
            }
        }
    }

    /// Blocks until the child ends. Call from a thread that may block, not from the event loop.
    public func waitForExit() -> Termination {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return Self.termination(status)
    }

    /// Reaps the child if it has ended, without blocking.
    public func exitIfEnded() -> Termination? {
        var status: Int32 = 0
        guard waitpid(pid, &status, WNOHANG) == pid else { return nil }
        return Self.termination(status)
    }

    static func termination(_ status: Int32) -> Termination {
        let signal = status & 0x7f
        return signal == 0 ? .exited((status >> 8) & 0xff) : .signalled(signal)
    }
}
