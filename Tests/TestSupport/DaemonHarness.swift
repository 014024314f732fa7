import Foundation
import MediaRouteIPC
import PrivateDaemons
import Testing

/// A real `mediarouted` process over a drivers directory, and the real `mediaroute` CLI against it.
public final class DaemonHarness: @unchecked Sendable {
    public let drivers: SupervisorHarness
    public var socket: String { drivers.root + "/run/mediarouted.sock" }
    public private(set) var daemon: ChildProcess?

    public static func binary(_ name: String) -> String { Executables.sibling(name) }

    public init() throws { drivers = try SupervisorHarness() }

    /// A harness for `body`, torn down afterwards (the daemon stopped by PID) whether `body` returns or throws.
    public static func run(_ body: (DaemonHarness) async throws -> Void) async throws {
        let harness = try DaemonHarness()
        try await withTearDown { try await body(harness) } tearDown: { await harness.tearDown() }
    }

    /// Starts the daemon (with `arguments` after the usual ones, and `environment` added to the
    /// test's; its stderr into `daemon.log` unless `standardError` is given) and waits until its socket answers.
    public func start(_ arguments: [String] = [], environment: [String: String] = [:], standardError: Int32? = nil) async throws {
        let log = open(drivers.root + "/daemon.log", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        defer { close(log) }
        let inherited = environment.isEmpty ? nil : ProcessInfo.processInfo.environment.merging(environment) { _, new in new }.map { "\($0.key)=\($0.value)" }
        daemon = try ChildProcess(executable: Self.binary("mediarouted"),
                                  arguments: ["--drivers-dir", drivers.drivers, "--state-dir", drivers.state, "--socket", socket] + arguments
                                      // Never the desktop's own session bus, unless the test gives one.
                                      + (arguments.contains("--mpris-bus") ? [] : ["--no-mpris"])
                                      // Pushes on a free port, so that daemons of tests side by side never collide.
                                      + (arguments.contains("--push-listen") || arguments.contains("--no-push") ? [] : ["--push-listen", "127.0.0.1:0"])
                                      // Never the machine's own configuration file (/etc/mediaroute), unless the test gives one.
                                      + (arguments.contains("--config") || environment["MEDIAROUTE_CONFIG"] != nil ? [] : ["--config", try emptyConfiguration()])
                                      // Routes end when their device goes away, unless the test asks for a reconnect window.
                                      + (arguments.contains("--reconnect-window") ? [] : ["--reconnect-window", "0"]),
                                  environment: inherited, standardOutput: log, standardError: standardError ?? log)
        try await waitUntil("daemon socket") { (try? UnixSocket.connect(path: self.socket)).map { close($0); return true } ?? false }
    }

    /// A configuration file with nothing in it: every setting at its default.
    private func emptyConfiguration() throws -> String {
        let path = drivers.root + "/empty-configuration.yaml"
        if !FileManager.default.fileExists(atPath: path) { try Data().write(to: URL(fileURLWithPath: path)) }
        return path
    }

    /// The daemon's resident memory, in KiB.
    public var residentKiB: Int? {
        guard let daemon, let status = try? String(contentsOfFile: "/proc/\(daemon.pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return nil }
        return line.split(separator: " ").dropFirst().first.flatMap { Int($0) }
    }

    /// How many descriptors the daemon holds open.
    public var openDescriptors: Int? {
        guard let daemon else { return nil }
        return (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(daemon.pid)/fd"))?.count
    }

    public var log: String { (try? String(contentsOfFile: drivers.root + "/daemon.log", encoding: .utf8)) ?? "" }

    public struct Result: Sendable {
        public let status: ChildProcess.Termination
        public let output: String
        public let error: String
        public var json: JSONValue? { try? JSONReader.parse(Array(output.utf8)) }
    }

    /// Runs `mediaroute ARGS --socket SOCKET`, stdin from /dev/null (no terminal).
    public func cli(_ arguments: [String], socket: String? = nil) async -> Result {
        let out = drivers.root + "/cli.\(UUID().uuidString.prefix(6))"
        let stdout = open(out + ".out", O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        let stderr = open(out + ".err", O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        defer { close(stdout); close(stderr) }
        guard let process = try? ChildProcess(executable: Self.binary("mediaroute"), arguments: ["--socket", socket ?? self.socket] + arguments,
                                              standardOutput: stdout, standardError: stderr) else {
            return Result(status: .exited(-1), output: "", error: "could not start mediaroute")
        }
        let status = await process.exitStatus()
        return Result(status: status, output: (try? String(contentsOfFile: out + ".out", encoding: .utf8)) ?? "",
                      error: (try? String(contentsOfFile: out + ".err", encoding: .utf8)) ?? "")
    }

    public func stop() async {
        if let daemon, daemon.exitIfEnded() == nil {
            kill(daemon.pid, SIGTERM)
            _ = await daemon.exitStatus()
        }
        daemon = nil
    }

    public func tearDown() async {
        await stop()
        try? FileManager.default.removeItem(atPath: drivers.root)
    }
}
