import CLinuxHelpers
import Foundation
import Logging
import MediaRouteIPC
import Synchronization

/// One running driver: its process (own group, socket on descriptor 3, stderr into our log), its
/// handshaken connection, and its exit, observed through a pidfd on the event loop.
final class DriverProcess: @unchecked Sendable {
    let manifest: DriverManifest
    let child: ChildProcess
    let connection: Connection
    let startedAt = ContinuousClock.now
    let supportsSimultaneousSessions: Bool
    /// The driver takes real-time samples (its type conforms to RealtimeSampleHandling).
    let takesSamples: Bool
    private var exitWatcher: DescriptorWatcher?
    private var stderrWatcher: DescriptorWatcher?
    /// Written on the loop when the process ends, awaited from anywhere: a lock, so no waiter is lost.
    private let exit = Mutex<(termination: ChildProcess.Termination?, waiters: [CheckedContinuation<ChildProcess.Termination, Never>])>((nil, []))

    var termination: ChildProcess.Termination? { exit.withLock { $0.termination } }

    var pid: pid_t { child.pid }

    /// Why the supervisor ended the driver, when it did (hung, violated the protocol, idle, ...).
    var stopReason: String?

    private init(manifest: DriverManifest, child: ChildProcess, connection: Connection, supportsSimultaneousSessions: Bool, takesSamples: Bool) {
        self.manifest = manifest
        self.child = child
        self.connection = connection
        self.supportsSimultaneousSessions = supportsSimultaneousSessions
        self.takesSamples = takesSamples
    }

    /// Starts the driver and completes the handshake, checking the third name of its protocol: the
    /// `protocol` it reports must be the manifest's. `onExit` runs on the loop when it ends.
    static func start(manifest: DriverManifest, stateDirectory: String, loop: EventLoop, logger: Logger,
                      handlers: RPCHandlers, onViolation: @escaping @Sendable (RPCError) -> Void,
                      onExit: @escaping @Sendable (DriverProcess, ChildProcess.Termination) -> Void) async throws -> DriverProcess {
        let (mine, theirs) = try UnixSocket.pair()
        var pipeEnds: [Int32] = [0, 0]
        guard clh_pipe_cloexec(&pipeEnds) == 0 else {
            close(mine); close(theirs)
            throw IPCSystemError("pipe2")
        }
        var environment = ProcessInfo.processInfo.environment
        environment["MEDIAROUTE_SUPERVISOR_PID"] = String(getpid())
        environment["MEDIAROUTE_STATE_DIRECTORY"] = stateDirectory
        environment.merge(manifest.environment) { _, driver in driver }
        // Spawned from the loop thread: the kernel sends a child its parent-death signal when the
        // *thread* that created it exits, and the loop thread lives as long as the supervisor.
        let spawnEnvironment = environment.map { "\($0.key)=\($0.value)" }
        let stderrWrite = pipeEnds[1]
        let spawned: Result<ChildProcess, IPCSystemError> = await withCheckedContinuation { done in
            loop.execute {
                done.resume(returning: Result { () throws(IPCSystemError) in
                    try ChildProcess(executable: manifest.executable, arguments: manifest.arguments, socket: theirs,
                                     environment: spawnEnvironment, standardError: stderrWrite)
                })
            }
        }
        let child: ChildProcess
        do {
            child = try spawned.get()
        } catch {
            close(mine); close(theirs); close(pipeEnds[0]); close(pipeEnds[1])
            throw error
        }
        close(theirs)
        close(pipeEnds[1])
        _ = fcntl(pipeEnds[0], F_SETFL, O_NONBLOCK)

        var configuration = ConnectionConfiguration(label: "driver \(manifest.protocolID) (pid \(child.pid))")
        configuration.violationPolicy = .disconnect
        configuration.defaultRequestTimeout = manifest.timeouts.request
        configuration.onProtocolViolation = onViolation
        let prefix = "[\(manifest.protocolID)]"
        let stderrFD = pipeEnds[0]
        let pidFD = clh_pidfd_open(child.pid)

        // Watch the process and its stderr from the loop before anything can go wrong.
        let holder = ProcessHolder()
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            loop.execute {
                var splitter = LineSplitter()
                holder.stderr = try? DescriptorWatcher(fd: stderrFD, loop: loop) { watcher in
                    let (lines, ended) = splitter.read(from: watcher.fd)
                    for line in lines { logger.info("\(prefix) \(line)") }
                    if ended { watcher.cancel() }
                }
                if pidFD >= 0 {
                    holder.exit = try? DescriptorWatcher(fd: pidFD, loop: loop) { watcher in
                        guard let termination = child.exitIfEnded() else { return }
                        watcher.cancel()
                        holder.terminated(termination)
                    }
                }
                done.resume()
            }
        }

        let connection: Connection
        do {
            connection = try await Connection.open(socket: mine, hello: Hello(role: .supervisor, name: "mediarouted"),
                                                   side: .acceptor(acceptingRoles: [.driver]), loop: loop,
                                                   configuration: configuration, handlers: handlers)
        } catch {
            child.signal(SIGKILL)
            throw error
        }
        let identity = await connection.peer?.identity ?? [:]
        let reported = identity["protocol"]?.stringValue ?? "(none)"
        guard reported == manifest.protocolID else {
            await connection.close()
            child.signal(SIGKILL)
            throw RPCError(.roleRejected, "the driver at \(manifest.executable) says its protocol is \"\(reported)\" but its manifest \(manifest.path) says \"\(manifest.protocolID)\"; the three names of a protocol must agree")
        }
        let process = DriverProcess(manifest: manifest, child: child, connection: connection,
                                    supportsSimultaneousSessions: identity["supportsSimultaneousSessions"]?.boolValue ?? false,
                                    takesSamples: identity["realtimeSampleHandling"]?.boolValue ?? false)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            loop.execute {
                process.exitWatcher = holder.exit
                process.stderrWatcher = holder.stderr
                holder.onTermination = { termination in
                    let waiters = process.exit.withLock { state in
                        state.termination = termination
                        defer { state.waiters.removeAll() }
                        return state.waiters
                    }
                    waiters.forEach { $0.resume(returning: termination) }
                    onExit(process, termination)
                }
                done.resume()
            }
        }
        return process
    }

    /// The child's exit status once it has ended; waits for it (call after killing, or when the
    /// connection closed and the process is on its way out).
    func waitForTermination() async -> ChildProcess.Termination {
        await withCheckedContinuation { continuation in
            let ended: ChildProcess.Termination? = exit.withLock { state in
                if let termination = state.termination { return termination }
                state.waiters.append(continuation)
                return nil
            }
            if let ended { continuation.resume(returning: ended) }
        }
    }

    /// Ends the driver's process group at once.
    func kill(reason: String) {
        if stopReason == nil { stopReason = reason }
        child.signal(SIGKILL)
    }
}

/// Holds the watchers and the first termination until the `DriverProcess` exists to receive it.
private final class ProcessHolder: @unchecked Sendable {
    var exit: DescriptorWatcher?
    var stderr: DescriptorWatcher?
    private var early: ChildProcess.Termination?
    var onTermination: ((ChildProcess.Termination) -> Void)? {
        didSet { if let early, let onTermination { self.early = nil; onTermination(early) } }
    }

    func terminated(_ termination: ChildProcess.Termination) {
        if let onTermination { onTermination(termination) } else { early = termination }
    }
}
