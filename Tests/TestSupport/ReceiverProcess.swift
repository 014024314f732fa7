import Foundation
import MediaRouteIPC
import PrivateDaemons

/// A `mediaroute-receiver` on a private Avahi, driven through its console: buttons pressed on its
/// standard input, pairing codes read from what it prints. Stopped by PID.
public final class ReceiverProcess: @unchecked Sendable {
    public let name: String
    public let stateDirectory: String
    public let console: ConsoleProcess

    /// Starts a receiver named `name` (with `--auth pin4` unless `arguments` say otherwise), with at
    /// most `openFileLimit` descriptors if given (through prlimit, which execs it: the PID is the receiver's).
    /// `environment` adds to Avahi's (a private sound server's, say). The receiver sees no display
    /// (so none opens windows on the desktop running the tests) unless `environment` gives one.
    public init(name: String, avahi: PrivateAvahi, root: String, arguments: [String] = [], environment: [String: String] = [:], openFileLimit: Int? = nil) throws {
        self.name = name
        stateDirectory = root + "/receiver-" + name.replacingOccurrences(of: " ", with: "-")
        try FileManager.default.createDirectory(atPath: stateDirectory, withIntermediateDirectories: true)
        let receiver = [DaemonHarness.binary("mediaroute-receiver"), "--name", name, "--state-dir", stateDirectory, "--host", "127.0.0.1", "--auth", "pin4"] + arguments
        let command = openFileLimit.map { ["/usr/bin/prlimit", "--nofile=\($0):\($0)", "--"] + receiver } ?? receiver
        console = try ConsoleProcess(command[0], Array(command.dropFirst()), environment: Self.noDisplay.merging(avahi.environment) { _, new in new }.merging(environment) { _, new in new },
                                 logPath: stateDirectory + ".log")
    }

    /// An empty DISPLAY and WAYLAND_DISPLAY: no display, as the receiver reads them.
    public static let noDisplay = ["DISPLAY": "", "WAYLAND_DISPLAY": ""]

    public var process: ChildProcess { console.process }
    /// Everything it printed, across restarts.
    public var output: String { console.output }

    /// The TCP port it listens on (from its newest "listening on" line).
    public var port: UInt16? { console.lastLine(startingWith: "listening on ")?.split(separator: ":").last.flatMap { UInt16($0) } }

    public func waitFor(_ text: String, after mark: Int = 0, seconds: Double = 20) async throws {
        try await console.waitFor(text, after: mark, seconds: seconds)
    }

    /// Waits until it is announced on the network.
    public func waitUntilAnnounced() async throws { try await waitFor("announced as \"") }

    /// Presses a button on its console (`volume 30`, `pause`, ...).
    public func press(_ command: String) { console.type(command) }

    /// Presses `status` until its answer contains `text` (commands reach the receiver asynchronously).
    public func statusShows(_ text: String, seconds: Double = 10) async throws {
        do {
            try await waitUntil("receiver \(name) status shows \"\(text)\"", seconds: seconds) {
                let mark = self.console.mark
                self.press("status")
                try? await Task.sleep(for: .milliseconds(100))
                return self.console.output(after: mark).contains(text)
            }
        } catch {
            throw TestTimeout(what: "receiver \(name) status never showed \"\(text)\"; it printed:\n\(output)")
        }
    }

    /// The newest pairing code it showed.
    public func pairingCode(seconds: Double = 20) async throws -> String {
        try await waitFor("pairing code for ", seconds: seconds)
        guard let code = console.lastLine(startingWith: "pairing code for ")?.split(separator: " ").last.map(String.init) else {
            throw TestTimeout(what: "receiver \(name) printed no pairing code")
        }
        return code
    }

    /// The newest pairing code it showed for the controller whose hello said `controller`.
    public func pairingCode(for controller: String, seconds: Double = 20) async throws -> String {
        let prefix = "pairing code for \(controller): "
        try await waitFor(prefix, seconds: seconds)
        guard let code = console.lastLine(startingWith: prefix)?.dropFirst(prefix.count), !code.isEmpty else {
            throw TestTimeout(what: "receiver \(name) printed no pairing code for \(controller)")
        }
        return String(code)
    }

    public func stop() async { await console.stop() }
    public func kill9() async { await console.kill9() }
    /// Starts it again with the same name, id and state.
    public func restart() throws { try console.restart() }
}

