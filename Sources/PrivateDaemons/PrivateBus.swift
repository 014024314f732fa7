import CLinuxHelpers
import Foundation
import MediaRouteIPC

/// A private `dbus-daemon` for one test: its own socket in a temporary directory, started in the
/// foreground so the test owns its PID, stopped by that PID. Never the machine's own bus.
public final class PrivateBus: @unchecked Sendable {  // its daemon changes only in init, restart and stop, called by one task at a time
    public enum Kind: String, Sendable { case system, session }

    public let directory: URL
    public let address: String
    private let config: URL
    /// The daemon running now (another after `restart`); used by one task at a time, as a test's bus is.
    private var process: ChildProcess
    /// The read end of the daemon's standard output, open until `stop` so that it never writes
    /// into a closed pipe.
    private var output: Int32
    private var stopped = false

    public init(kind: Kind = .system) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("mediaroute-bus-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let socket = directory.appendingPathComponent("bus.sock").path
        address = "unix:path=\(socket)"
        config = directory.appendingPathComponent("bus.conf")
        do {
            try """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig><type>\(kind.rawValue)</type><listen>\(address)</listen><auth>EXTERNAL</auth>
            <policy context="default"><allow user="*"/><allow own="*"/><allow send_destination="*"/>
            <allow receive_sender="*"/></policy></busconfig>
            """.write(to: config, atomically: true, encoding: .utf8)
            (process, output) = try Self.launch(config: config, socket: socket)
        } catch {
            // Nothing started: leave nothing behind either.
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    /// Starts `dbus-daemon` on `config` and returns once it listens on `socket`, with the read end
    /// of its standard output.
    private static func launch(config: URL, socket: String) throws -> (ChildProcess, Int32) {
        var ends: [Int32] = [-1, -1]
        let process: ChildProcess
        do {
            guard clh_pipe_cloexec(&ends) == 0 else { throw PrivateDaemonError("cannot make a pipe for dbus-daemon: errno \(errno)") }
            let devNull = open("/dev/null", O_WRONLY | O_CLOEXEC)
            defer { close(devNull) }
            process = try ChildProcess(executable: "/usr/bin/dbus-daemon",
                                       arguments: ["--config-file=\(config.path)", "--nofork", "--nopidfile", "--print-address"],
                                       standardOutput: ends[1], standardError: devNull)
        } catch {
            ends.filter { $0 >= 0 }.forEach { close($0) }
            throw error
        }
        close(ends[1])
        // The daemon prints its address once it listens. Its socket file appears earlier, at
        // bind(): a client connecting between the two is refused.
        guard waitForLine(from: ends[0], within: 5_000) else {
            kill(process.pid, SIGTERM)
            _ = process.waitForExit()
            close(ends[0])
            throw PrivateDaemonError("dbus-daemon did not print its address within 5 s (listening on \(socket))")
        }
        return (process, ends[0])
    }

    /// Stops the daemon by PID and starts another at the same address, as a bus restarted under
    /// its clients: every connection to the old one is dropped, new ones reach the new one.
    public func restart() throws {
        precondition(!stopped, "a stopped bus is not restarted")
        kill(process.pid, SIGTERM)
        _ = process.waitForExit()
        close(output)
        do {
            (process, output) = try Self.launch(config: config, socket: String(address.dropFirst("unix:path=".count)))
        } catch {
            stopped = true
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    /// `restart` from async code (waiting for the daemons blocks).
    public func restartFromTask() async throws {
        try await onThreadOfItsOwn { try self.restart() }
    }

    /// True once a whole line has come from `fd`; false if none came within `milliseconds` or the
    /// writer closed first.
    private static func waitForLine(from fd: Int32, within milliseconds: Int) -> Bool {
        let deadline = Date().addingTimeInterval(Double(milliseconds) / 1000)
        while true {
            var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let left = Int32(max(0, deadline.timeIntervalSinceNow * 1000))
            guard poll(&ready, 1, left) > 0 else { return false }
            var byte: UInt8 = 0
            guard read(fd, &byte, 1) == 1 else { return false }
            if byte == UInt8(ascii: "\n") { return true }
        }
    }

    /// Starts a bus from async code. Waiting for the daemon's address blocks (for seconds on a busy
    /// machine), so it happens on a thread of its own, never on one of the cooperative pool's few:
    /// tests starting buses side by side starved every other task of the process that way.
    public static func start(kind: Kind = .system) async throws -> PrivateBus {
        try await onThreadOfItsOwn { try PrivateBus(kind: kind) }
    }

    /// `stop` from async code, for the same reason: waiting for the daemon to exit blocks.
    public func stopFromTask() async {
        _ = try? await onThreadOfItsOwn { self.stop() }
    }

    public var pid: Int32 { process.pid }

    /// Stops the daemon by PID and removes its directory. Safe to call twice.
    public func stop() {
        guard !stopped else { return }
        stopped = true
        kill(process.pid, SIGTERM)
        _ = process.waitForExit()
        close(output)
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }
}

/// A private daemon failed to start or behave; the sentence says which and how.
public struct PrivateDaemonError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
