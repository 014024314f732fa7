import CLinuxHelpers
import Foundation
import Logging
import MediaRouteIPC
import MediaRouteWire
import Synchronization

/// One running driver (or NowPlaying extension, supervised the same way): its process (own group,
/// socket on descriptor 3, stderr into our log), its handshaken connection, and its exit, observed
/// through a pidfd on the event loop.
final class DriverProcess: Sendable {
    let manifest: DriverManifest
    let child: ChildProcess
    let connection: Connection
    let startedAt = ContinuousClock.now
    let supportsSimultaneousSessions: Bool
    /// The driver takes real-time samples (its type conforms to RealtimeSampleHandling).
    let takesSamples: Bool
    /// The pidfd and stderr watchers, kept alive as long as the process is.
    private let holder: ProcessHolder
    /// Written on the loop when the process ends, awaited from anywhere: a lock, so no waiter is lost.
    private let exit = Mutex<(termination: ChildProcess.Termination?, waiters: [CheckedContinuation<ChildProcess.Termination, Never>])>((nil, []))

    var termination: ChildProcess.Termination? { exit.withLock { $0.termination } }

    var pid: pid_t { child.pid }

    private let stopState = Mutex<StopReason?>(nil)
    /// Why the supervisor ended the driver, when it did (hung, violated the protocol, idle, ...);
    /// the first reason given wins.
    var stopReason: StopReason? { stopState.withLock { $0 } }

    private init(manifest: DriverManifest, child: ChildProcess, connection: Connection, supportsSimultaneousSessions: Bool, takesSamples: Bool,
                 holder: ProcessHolder) {
        self.manifest = manifest
        self.child = child
        self.connection = connection
        self.supportsSimultaneousSessions = supportsSimultaneousSessions
        self.takesSamples = takesSamples
        self.holder = holder
    }

    /// Records why the driver is being ended, unless a reason was recorded already.
    func noteStop(_ reason: StopReason) { stopState.withLock { if $0 == nil { $0 = reason } } }

    /// The stop reason that explains `termination`. A driver that dies closes its channel as it
    /// goes, and that close may be seen first: `closedChannel` explains only an end by SIGKILL,
    /// as our kill is; a crash is named by its own signal, an exit by its status.
    func stopReason(explaining termination: ChildProcess.Termination) -> StopReason? {
        let reason = stopReason
        return reason == .closedChannel && termination != .signalled(SIGKILL) ? nil : reason
    }

    /// Starts the driver and completes the handshake, checking the names it gives against its
    /// manifest (`DriverManifest.check`). `onExit` runs on the loop when it ends.
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
        if case .remoteMediaExtension(let application) = manifest.kind { environment["MEDIAROUTE_EXTENSION_APPLICATION"] = application }
        environment.merge(manifest.environment) { _, driver in driver }
        // Spawned from the loop thread: the kernel sends a child its parent-death signal when the
        // *thread* that created it exits, and the loop thread lives as long as the supervisor.
        let spawnEnvironment = environment.map { "\($0.key)=\($0.value)" }
        let stderrWrite = pipeEnds[1]
        // A driver reads nothing from the supervisor's terminal: its only input is descriptor 3.
        let nothing = open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer { if nothing >= 0 { close(nothing) } }
        let spawned: Result<ChildProcess, IPCSystemError> = await withCheckedContinuation { done in
            loop.execute {
                done.resume(returning: Result { () throws(IPCSystemError) in
                    try ChildProcess(executable: manifest.executable, arguments: manifest.arguments, socket: theirs,
                                     environment: spawnEnvironment, standardInput: nothing >= 0 ? nothing : nil,
                                     standardOutput: stderrWrite, standardError: stderrWrite)
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

        var configuration = ConnectionConfiguration(label: "\(manifest.kindName) \(manifest.protocolID) (pid \(child.pid))")
        configuration.violationPolicy = .disconnect
        // The names in the handshake are checked against the manifest: a process that names another
        // protocol (or app) is answered with an error of its own and closed, and the manifest is
        // refused, not retried.
        configuration.acceptHello = { hello throws(RPCError) in try manifest.check(hello.identity) }
        configuration.defaultRequestTimeout = manifest.timeouts.request
        configuration.onProtocolViolation = onViolation
        let prefix = "[\(manifest.protocolID)]"
        let attribution: Logger.Metadata = ["driver": .string(manifest.protocolID)]  // MEDIAROUTE_DRIVER in the journal
        let stderrFD = pipeEnds[0]
        let pidFD = clh_pidfd_open(child.pid)

        // Watch the process and its stderr from the loop before anything can go wrong.
        let holder = ProcessHolder()
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            loop.execute {
                var splitter = LineSplitter()
                let stderr = try? DescriptorWatcher(fd: stderrFD, loop: loop) { watcher in
                    let (lines, ended) = splitter.read(from: watcher.fd)
                    for line in lines { logger.info("\(prefix) \(line)", metadata: attribution) }
                    if ended { watcher.cancel() }
                }
                let exit = pidFD < 0 ? nil : try? DescriptorWatcher(fd: pidFD, loop: loop) { watcher in
                    guard let termination = child.exitIfEnded() else { return }
                    watcher.cancel()
                    holder.terminated(termination)
                }
                holder.keep([stderr, exit].compactMap { $0 })
                done.resume()
            }
        }

        let connection: Connection
        do {
            connection = try await Connection.open(socket: mine, hello: Hello(role: .supervisor, name: "mediarouted"),
                                                   side: .acceptor(acceptingRoles: [manifest.role]), loop: loop,
                                                   configuration: configuration, handlers: handlers)
        } catch let error as RPCError where error.code == .identityMismatch {
            // The driver was told why in an error frame: let it write that to its log and leave by
            // itself (killing it at once lost its last words), within a second.
            let killer = Task {
                try await Task.sleep(for: .seconds(1))
                child.signal(SIGKILL)
            }
            _ = await child.exitStatus(loop: loop)
            killer.cancel()
            throw error
        } catch {
            child.signal(SIGKILL)
            throw error
        }
        // Checked in the handshake (`acceptHello`), so it decodes (an extension's is no driver's: nil).
        let identity = await connection.peer.flatMap { try? DriverIdentity($0.identity) }
        let process = DriverProcess(manifest: manifest, child: child, connection: connection,
                                    supportsSimultaneousSessions: identity?.supportsSimultaneousSessions ?? false,
                                    takesSamples: identity?.realtimeSampleHandling ?? false, holder: holder)
        holder.onTermination(on: loop) { termination in
            let waiters = process.exit.withLock { state in
                state.termination = termination
                defer { state.waiters.removeAll() }
                return state.waiters
            }
            waiters.forEach { $0.resume(returning: termination) }
            onExit(process, termination)
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
    func kill(_ reason: StopReason) {
        noteStop(reason)
        child.signal(SIGKILL)
    }
}

/// Why the supervisor ended a driver. Intentional stops are not crashes: they do not count
/// against the restart budget, and `drivers` says what happened instead of a signal number.
enum StopReason: Sendable, Equatable, CustomStringConvertible {
    case idle
    case restartedByOperator
    case disabledByOperator
    case disabledByConfiguration
    case supervisorShuttingDown
    /// Killed for misbehaving: hung, flooding, violating the protocol.
    case killed(String)
    /// Killed because its end of the channel closed while it lived on.
    case closedChannel

    var isIntentional: Bool {
        switch self {
        case .killed, .closedChannel: false
        default: true
        }
    }

    var description: String {
        switch self {
        case .idle: "exited when idle"
        case .restartedByOperator: "restarted by the operator"
        case .disabledByOperator: "stopped by the operator"
        case .disabledByConfiguration: "stopped: disabled in the configuration file"
        case .supervisorShuttingDown: "stopped: the supervisor is shutting down"
        case .killed(let why): why
        case .closedChannel: "closed its IPC channel"
        }
    }
}

/// Holds the watchers, and the first termination until the `DriverProcess` exists to receive it:
/// the process can end before its handshake is over.
private final class ProcessHolder: Sendable {
    private let state = Mutex<(watchers: [DescriptorWatcher], early: ChildProcess.Termination?,
                               receiver: (@Sendable (ChildProcess.Termination) -> Void)?)>(([], nil, nil))

    func keep(_ watchers: [DescriptorWatcher]) { state.withLock { $0.watchers = watchers } }

    /// `receiver` runs on `loop`, as terminations do: one that came early (a driver that crashed
    /// right after its handshake) is handed over there too, not on the caller's thread, where the
    /// supervisor's `assumeIsolated` would trap.
    func onTermination(on loop: EventLoop, _ receiver: @escaping @Sendable (ChildProcess.Termination) -> Void) {
        let early: ChildProcess.Termination? = state.withLock { state in
            state.receiver = receiver
            defer { state.early = nil }
            return state.early
        }
        if let early { loop.execute { receiver(early) } }
    }

    func terminated(_ termination: ChildProcess.Termination) {
        let receiver: (@Sendable (ChildProcess.Termination) -> Void)? = state.withLock { state in
            if state.receiver == nil { state.early = termination }
            return state.receiver
        }
        receiver?(termination)
    }
}
