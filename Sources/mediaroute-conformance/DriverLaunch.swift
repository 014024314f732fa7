import CLinuxHelpers
import Foundation
import MediaRouteIPC
import MediaRouteSupervisor

/// A driver process started from its manifest exactly as `mediarouted` starts one (IPC/README.md
/// §11.2, "The driver's process"): its own process group, our end of a socketpair as its
/// descriptor 3, standard input `/dev/null`, the supervisor's environment plus
/// `MEDIAROUTE_SUPERVISOR_PID`, `MEDIAROUTE_STATE_DIRECTORY` and the manifest's `environment`.
/// Its standard output and error go to the kit's standard error, prefixed, when asked for.
final class DriverLaunch: Sendable {
    let child: ChildProcess
    /// Our end of the socketpair: handed to a `Connection`, or used raw.
    let socket: Int32

    /// Spawns the driver from the loop thread, as the supervisor does: the kernel sends a child its
    /// parent-death signal when the *thread* that made it exits, and the loop thread lives as long
    /// as the kit.
    static func start(manifest: DriverManifest, stateDirectory: String, showOutput: Bool) async throws -> DriverLaunch {
        let spawned: Result<DriverLaunch, Error> = await withCheckedContinuation { done in
            EventLoop.shared.execute {
                done.resume(returning: Result { try DriverLaunch(manifest: manifest, stateDirectory: stateDirectory, showOutput: showOutput) })
            }
        }
        return try spawned.get()
    }

    private init(manifest: DriverManifest, stateDirectory: String, showOutput: Bool) throws {
        let (mine, theirs) = try UnixSocket.pair()
        var environment = ProcessInfo.processInfo.environment
        environment["MEDIAROUTE_SUPERVISOR_PID"] = String(getpid())
        environment["MEDIAROUTE_STATE_DIRECTORY"] = stateDirectory
        environment.merge(manifest.environment) { _, driver in driver }
        let nothing = open("/dev/null", O_RDWR | O_CLOEXEC)
        defer { if nothing >= 0 { close(nothing) } }
        let output = showOutput ? STDERR_FILENO : nothing
        do {
            child = try ChildProcess(executable: manifest.executable, arguments: manifest.arguments, socket: theirs,
                                     environment: environment.map { "\($0.key)=\($0.value)" }, standardInput: nothing,
                                     standardOutput: output, standardError: output)
        } catch {
            close(mine)
            close(theirs)
            throw error
        }
        close(theirs)
        socket = mine
    }

    var pid: pid_t { child.pid }

    /// Waits for the process to end by itself for at most `bound`; nil if it did not (it is then
    /// killed, by its process group, and reaped).
    func exit(within bound: Duration) async -> ChildProcess.Termination? {
        let child = self.child
        let killer = Task { () -> Bool in
            do { try await Task.sleep(for: bound) } catch { return false }
            // Never signal a child already reaped: its PID may be another process's by now.
            guard child.exitIfEnded() == nil else { return false }
            child.signal(SIGKILL)
            return true
        }
        let termination = await child.exitStatus()
        killer.cancel()
        return await killer.value ? nil : termination
    }

    /// Stops the process by its PID: SIGTERM to its group, SIGKILL after a second.
    func stop() async {
        if child.exitIfEnded() != nil { return }
        child.signal(SIGTERM)
        _ = await exit(within: .seconds(1))
    }

    /// CPU time (user + system) the process has used, from /proc: how a spinning driver is told
    /// from one that waits. Nil once it has ended.
    var cpuSeconds: Double? {
        guard let stat = try? String(contentsOfFile: "/proc/\(child.pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the command: state is field 3, utime 14 and stime 15 (1-based over the whole line).
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}
