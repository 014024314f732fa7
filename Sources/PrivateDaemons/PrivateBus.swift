import Foundation
import MediaRouteIPC

/// A private `dbus-daemon` for one test: its own socket in a temporary directory, started in the
/// foreground so the test owns its PID, stopped by that PID. Never the machine's own bus.
public final class PrivateBus: @unchecked Sendable {
    public enum Kind: String { case system, session }

    public let directory: URL
    public let address: String
    private let process: ChildProcess
    private var stopped = false

    public init(kind: Kind = .system) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("mediaroute-bus-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let socket = directory.appendingPathComponent("bus.sock").path
        address = "unix:path=\(socket)"
        let config = directory.appendingPathComponent("bus.conf")
        try """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig><type>\(kind.rawValue)</type><listen>\(address)</listen><auth>EXTERNAL</auth>
        <policy context="default"><allow user="*"/><allow own="*"/><allow send_destination="*"/>
        <allow receive_sender="*"/></policy></busconfig>
        """.write(to: config, atomically: true, encoding: .utf8)
        let devNull = open("/dev/null", O_WRONLY | O_CLOEXEC)
        defer { close(devNull) }
        process = try ChildProcess(executable: "/usr/bin/dbus-daemon",
                                   arguments: ["--config-file=\(config.path)", "--nofork", "--nopidfile"],
                                   standardOutput: devNull, standardError: devNull)
        let deadline = Date().addingTimeInterval(5)
        while !FileManager.default.fileExists(atPath: socket) {
            guard process.exitIfEnded() == nil, Date() < deadline else {
                stop()
                throw PrivateDaemonError("dbus-daemon did not create \(socket) within 5 s")
            }
            usleep(10_000)
        }
    }

    public var pid: Int32 { process.pid }

    /// Stops the daemon by PID and removes its directory. Safe to call twice.
    public func stop() {
        guard !stopped else { return }
        stopped = true
        kill(process.pid, SIGTERM)
        _ = process.waitForExit()
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }
}

/// A private daemon failed to start or behave; the sentence says which and how.
public struct PrivateDaemonError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
