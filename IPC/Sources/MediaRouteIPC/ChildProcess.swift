import CLinuxHelpers
import Glibc
import Synchronization

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
    /// Set once the child is reaped: a pid is reaped once, and every later question must get the same answer.
    private let reaped = Mutex<Termination?>(nil)

    /// Starts `executable` with `arguments`; `socket`, if given, becomes the child's descriptor 3, and
    /// `environment` (if given) replaces the inherited one. Standard input, output and error come
    /// from the given descriptors, else they are inherited.
    public init(executable: String, arguments: [String], socket: Int32? = nil, environment: [String]? = nil,
                standardInput: Int32? = nil, standardOutput: Int32? = nil, standardError: Int32? = nil) throws(IPCSystemError) {
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
        if let standardInput { posix_spawn_file_actions_adddup2(&actions, standardInput, 0) }
        if let standardOutput { posix_spawn_file_actions_adddup2(&actions, standardOutput, 1) }
        if let standardError { posix_spawn_file_actions_adddup2(&actions, standardError, 2) }
        // Nothing else crosses over: a descriptor some library opened without close-on-exec would
        // otherwise keep a pipe or socket of ours open for as long as the child lives.
        _ = clh_spawn_close_from(&actions, socket == nil ? 3 : Self.socketDescriptor + 1)
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

    /// Stops the child by its PID: SIGTERM, then SIGKILL if it is still there after `grace`.
    @discardableResult
    public func terminate(grace: Duration, loop: EventLoop = .shared) async -> Termination {
        // Never signal a child already reaped: its PID may belong to another process by now.
        if let ended = exitIfEnded() { return ended }
        kill(pid, SIGTERM)
        let killer = Task {
            try await Task.sleep(for: grace)
            kill(pid, SIGKILL)
        }
        defer { killer.cancel() }
        return await exitStatus(loop: loop)
    }

    /// How a child ended.
    public enum Termination: Sendable, Equatable, CustomStringConvertible {
        case exited(Int32)
        case signalled(Int32)
        /// Something outside this object reaped the child, so its status is lost.
        case unknown
        public var description: String {
            switch self {
            case .exited(let code): "exited with status \(code)"
            case .signalled(let signal): "killed by signal \(signal) (\(String(cString: strsignal(signal))))"
            case .unknown: "ended (its status was collected elsewhere)"
            }
        }
    }

    /// Waits for the child to end without blocking any thread: a pidfd watched by the event loop.
    /// Use this from async code; a blocking wait there would hold one of the few cooperative threads.
    public func exitStatus(loop: EventLoop = .shared) async -> Termination {
        if let ended = exitIfEnded() { return ended }
        let pidFD = clh_pidfd_open(pid)
        guard pidFD >= 0 else { return await pollExit(loop: loop) }
        return await withCheckedContinuation { continuation in
            loop.execute {
                do {
                    // The pidfd is readable once the child has ended, even if that was before now.
                    _ = try DescriptorWatcher(fd: pidFD, loop: loop) { watcher in
                        guard let ended = self.exitIfEnded() else { return }
                        watcher.cancel()
                        continuation.resume(returning: ended)
                    }
                } catch {
                    close(pidFD)
                    Task { continuation.resume(returning: await self.pollExit(loop: loop)) }
                }
            }
        }
    }

    /// Without a pidfd (a kernel before 5.3): asks every 10 ms on the loop's timers, which a
    /// cancelled task cannot turn into a busy loop.
    private func pollExit(loop: EventLoop) async -> Termination {
        await withCheckedContinuation { continuation in
            @Sendable func check() {
                if let ended = exitIfEnded() { return continuation.resume(returning: ended) }
                _ = loop.schedule(after: .milliseconds(10)) { check() }
            }
            loop.execute { check() }
        }
    }

    /// Blocks until the child ends. Call from a thread that may block, not from the event loop.
    public func waitForExit() -> Termination {
        if reaped.withLock({ $0 }) == nil {
            // Wait without reaping: the status is collected by exitIfEnded, under the lock, exactly once.
            var info = siginfo_t()
            while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR {}
        }
        return exitIfEnded() ?? .unknown
    }

    /// Reaps the child if it has ended, without blocking; the same answer every time after that.
    public func exitIfEnded() -> Termination? {
        reaped.withLock { known in
            if let known { return known }
            var status: Int32 = 0
            var result: pid_t
            repeat { result = waitpid(pid, &status, WNOHANG) } while result < 0 && errno == EINTR
            if result == pid {
                known = Self.termination(status)
            } else if result < 0 && errno == ECHILD {
                known = .unknown
            }
            return known
        }
    }

    static func termination(_ status: Int32) -> Termination {
        let signal = status & 0x7f
        return signal == 0 ? .exited((status >> 8) & 0xff) : .signalled(signal)
    }
}
