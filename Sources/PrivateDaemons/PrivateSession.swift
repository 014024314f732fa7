import DBus
import Foundation
import MediaRouteIPC
import Synchronization

/// A desktop session's daemons for one test: a private session bus and a directory of their own
/// (runtime directory, home, logs), nothing of the machine's session. Daemons are started in order
/// by `launch` and stopped by PID in reverse order, then the bus; `stop` removes the directory.
final class PrivateSession: Sendable {
    let directory: URL
    let bus: PrivateBus
    /// A connection to the bus, to wait for daemons' names.
    let watcher: DBusConnection
    /// The daemons started, in order; nil once stopped.
    private let started = Mutex<[ConsoleProcess]?>([])

    /// Makes `directory` (others may enter it: a daemon run as another user has its runtime directory
    /// inside), starts the bus.
    init(directory: URL) async throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        self.directory = directory
        do {
            bus = try await PrivateBus.start(kind: .session)
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
        do {
            watcher = try await DBusConnection.connect(address: bus.address)
        } catch {
            await bus.stopFromTask()
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    /// A socket path in the directory nothing listens on: the bus address of a bus a daemon must not reach.
    var deadSocket: String { directory.appendingPathComponent("no-bus").path }

    /// What every daemon gets: the private bus and runtime directory, a home in `home`, GSettings in
    /// memory, no display of the machine's, and no system bus (its address names `deadSocket`: a
    /// daemon asking for logind, colord or UPower gets "cannot connect", never the machine's).
    func environment(runtime: URL, home: URL) -> [String: String] {
        ["XDG_RUNTIME_DIR": runtime.path, "DBUS_SESSION_BUS_ADDRESS": bus.address, "DBUS_SYSTEM_BUS_ADDRESS": "unix:path=\(deadSocket)", "HOME": home.path,
         "XDG_CONFIG_HOME": home.path + "/config", "XDG_STATE_HOME": home.path + "/state", "XDG_CACHE_HOME": home.path + "/cache",
         "XDG_DATA_HOME": home.path + "/data", "GSETTINGS_BACKEND": "memory", "DISPLAY": "", "WAYLAND_DISPLAY": "", "NO_AT_BRIDGE": "1"]
    }

    /// Starts `executable` with `environment`, its output into `log`.log in the directory.
    @discardableResult
    func launch(_ executable: String, _ arguments: [String], environment: [String: String], log: String) throws -> ConsoleProcess {
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw PrivateDaemonError("\(executable) is not installed (see .ci/apt-packages)")
        }
        let process = try ConsoleProcess(executable, arguments, environment: environment, logPath: directory.appendingPathComponent("\(log).log").path)
        started.withLock { $0?.append(process) }
        return process
    }

    /// Returns once `name` is owned on the bus.
    func waitForName(_ name: String, within limit: Duration = .seconds(30)) async throws {
        try await pollUntil("\(name) on the bus", within: limit) { try await watcher.nameHasOwner(name) }
    }

    var processes: [ConsoleProcess] { started.withLock { $0 ?? [] } }
    var pids: [Int32] { processes.map(\.process.pid) }
    var logs: String { processes.map { "== \($0.executable)\n\($0.output.suffix(3000))" }.joined(separator: "\n") }

    /// Stops the daemons by PID, last started first, then the bus; removes the directory. Safe to call twice.
    func stop() async {
        guard let processes = started.withLock({ started in defer { started = nil }; return started }) else { return }
        await watcher.close()
        for process in processes.reversed() { await process.stop(grace: .seconds(10)) }
        await bus.stopFromTask()
        try? FileManager.default.removeItem(at: directory)
    }
}
