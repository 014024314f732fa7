import CLinuxHelpers
import Foundation
import MediaRouteIPC
import PrivateDaemons

/// A `mediaroute-receiver` process on a private Avahi: its console (standard input) to press its
/// buttons, and what it printed, to read its pairing codes. Stopped by PID.
public final class ReceiverProcess: @unchecked Sendable {
    public let name: String
    public let stateDirectory: String
    private let avahi: PrivateAvahi
    private let arguments: [String]
    private let logPath: String
    public private(set) var process: ChildProcess
    private var input: Int32

    /// Starts a receiver named `name`; `arguments` add to (or override) `--auth pin4`.
    public init(name: String, avahi: PrivateAvahi, root: String, arguments: [String] = []) throws {
        self.name = name
        self.avahi = avahi
        self.arguments = arguments
        stateDirectory = root + "/receiver-" + name.replacingOccurrences(of: " ", with: "-")
        logPath = stateDirectory + ".log"
        try FileManager.default.createDirectory(atPath: stateDirectory, withIntermediateDirectories: true)
        (process, input) = try Self.spawn(name: name, avahi: avahi, stateDirectory: stateDirectory, logPath: logPath, arguments: arguments)
    }

    private static func spawn(name: String, avahi: PrivateAvahi, stateDirectory: String, logPath: String, arguments: [String]) throws -> (ChildProcess, Int32) {
        let log = open(logPath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        var ends: [Int32] = [-1, -1]
        _ = clh_pipe_cloexec(&ends)
        defer { close(log); close(ends[0]) }
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = avahi.busAddress
        let process = try ChildProcess(executable: DaemonHarness.binary("mediaroute-receiver"),
                                       arguments: ["--name", name, "--state-dir", stateDirectory, "--host", "127.0.0.1", "--auth", "pin4"] + arguments,
                                       environment: environment.map { "\($0.key)=\($0.value)" },
                                       standardInput: ends[0], standardOutput: log, standardError: log)
        return (process, ends[1])
    }

    /// Everything it printed, across restarts.
    public var output: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    public func waitFor(_ text: String, after mark: String.Index? = nil, seconds: Double = 20) async throws {
        do {
            try await waitUntil("receiver \(name) prints \"\(text)\"", seconds: seconds) {
                let seen = self.output
                return seen[(mark ?? seen.startIndex)...].contains(text)
            }
        } catch {
            throw TestTimeout(what: "receiver \(name) never printed \"\(text)\"; it printed:\n\(output)")
        }
    }

    /// The TCP port it listens on (from its first line).
    public var port: UInt16? {
        output.split(separator: "\n").last { $0.hasPrefix("listening on ") }.flatMap { $0.split(separator: ":").last.flatMap { UInt16($0) } }
    }

    /// Waits until it is announced on the network.
    public func waitUntilAnnounced() async throws { try await waitFor("announced as \"") }

    /// Presses a button on its console (`volume 30`, `pause`, ...).
    public func press(_ command: String) { _ = (command + "\n").withCString { write(input, $0, strlen($0)) } }

    /// Presses `status` until its answer contains `text` (commands reach the receiver asynchronously).
    public func statusShows(_ text: String, seconds: Double = 10) async throws {
        do {
            try await waitUntil("receiver \(name) status shows \"\(text)\"", seconds: seconds) {
                let mark = self.output.endIndex
                self.press("status")
                try? await Task.sleep(for: .milliseconds(100))
                let seen = self.output
                return mark <= seen.endIndex && seen[mark...].contains(text)
            }
        } catch {
            throw TestTimeout(what: "receiver \(name) status never showed \"\(text)\"; it printed:\n\(output)")
        }
    }

    /// The newest pairing code it showed.
    public func pairingCode(seconds: Double = 20) async throws -> String {
        var code: String?
        try await waitUntil("receiver \(name) shows a pairing code", seconds: seconds) {
            code = self.output.split(separator: "\n").last { $0.hasPrefix("pairing code for ") }.flatMap { $0.split(separator: " ").last.map(String.init) }
            return code != nil
        }
        return code!
    }

    /// Stops it by PID (SIGTERM; it withdraws its announcement).
    public func stop() async {
        close(input)
        input = -1
        guard process.exitIfEnded() == nil else { return }
        kill(process.pid, SIGTERM)
        _ = await process.exitStatus()
    }

    /// Kills it at once, as a power cut would.
    public func kill9() async {
        kill(process.pid, SIGKILL)
        _ = await process.exitStatus()
    }

    /// Starts it again with the same name, id and state (after `stop` or `kill9`).
    public func restart() throws {
        (process, input) = try Self.spawn(name: name, avahi: avahi, stateDirectory: stateDirectory, logPath: logPath, arguments: arguments)
    }
}
