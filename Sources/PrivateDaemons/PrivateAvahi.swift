import Foundation
import MediaRouteIPC

/// A private Avahi daemon on a private D-Bus system bus, for the demo and the tests on a machine
/// without one of its own.
///
/// The daemon runs in a network namespace of its own (and a mount namespace with a private /run,
/// so several coexist): its only interface is that namespace's loopback, so it never multicasts on
/// the machine's real interfaces. It announces services at 127.0.0.1, which programs in the
/// machine's own namespace reach on their loopback, so receivers, mediarouted and drivers run
/// there as usual, with `DBUS_SYSTEM_BUS_ADDRESS` set to `busAddress`. Needs root (namespaces).
public final class PrivateAvahi: @unchecked Sendable {
    public let bus: PrivateBus
    public let namespace: String
    public var busAddress: String { bus.address }
    private var daemon: ChildProcess?
    private var stopped = false

    /// The environment entry every client of this Avahi needs.
    public var environment: [String: String] { ["DBUS_SYSTEM_BUS_ADDRESS": bus.address] }

    public init() async throws {
        guard getuid() == 0 else {
            throw PrivateDaemonError("a private Avahi daemon needs a network namespace of its own, and creating one needs root")
        }
        for tool in ["/usr/sbin/ip", "/usr/sbin/avahi-daemon", "/usr/bin/unshare"] where !FileManager.default.isExecutableFile(atPath: tool) {
            throw PrivateDaemonError("\(tool) is missing (apt-get install iproute2 avahi-daemon util-linux)")
        }
        bus = try await PrivateBus.start()
        namespace = "mediaroute-\(UUID().uuidString.prefix(8).lowercased())"
        do {
            try await Self.run("/usr/sbin/ip", ["netns", "add", namespace])
            try await Self.run("/usr/sbin/ip", ["-n", namespace, "link", "set", "lo", "up"])
            try await startDaemon()
        } catch {
            await stop()
            throw error
        }
    }

    public var daemonPID: Int32? { daemon?.pid }

    /// Starts the daemon (again, after `stopDaemon`) and waits until it has announced its host name.
    public func startDaemon() async throws {
        await stopDaemon()  // one daemon at a time: a running one is never left behind unreferenced
        let directory = bus.directory.path
        let config = directory + "/avahi-daemon.conf"
        try """
        [server]
        use-ipv4=yes
        use-ipv6=no
        ratelimit-interval-usec=1000000
        ratelimit-burst=1000
        [wide-area]
        enable-wide-area=no
        [publish]
        publish-hinfo=no
        publish-workstation=no
        """.write(toFile: config, atomically: true, encoding: .utf8)
        let logPath = directory + "/avahi-daemon.log"
        let log = open(logPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        defer { close(log) }
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = bus.address
        // ip execs unshare, which execs sh, which execs avahi-daemon: the PID stays the daemon's.
        let daemon = try ChildProcess(executable: "/usr/sbin/ip", arguments: [
            "netns", "exec", namespace, "unshare", "-m", "--propagation", "private", "sh", "-c",
            "mount -t tmpfs none /run && exec avahi-daemon -f \(config) --no-drop-root --no-chroot --no-rlimits",
        ], environment: environment.map { "\($0.key)=\($0.value)" }, standardOutput: log, standardError: log)
        self.daemon = daemon
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if let ended = daemon.exitIfEnded() {
                throw PrivateDaemonError("avahi-daemon \(ended): \((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "")")
            }
            if let text = try? String(contentsOfFile: logPath, encoding: .utf8), text.contains("Server startup complete") { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw PrivateDaemonError("avahi-daemon did not start within 10 s: \((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "")")
    }

    /// Stops the daemon by its PID (the bus and namespace stay, for `startDaemon`).
    public func stopDaemon() async {
        guard let daemon else { return }
        self.daemon = nil
        await daemon.terminate(grace: .seconds(5))
    }

    /// Stops the daemon and the bus, and removes the namespace.
    public func stop() async {
        guard !stopped else { return }
        stopped = true
        await stopDaemon()
        _ = try? await Self.run("/usr/sbin/ip", ["netns", "delete", namespace])
        await bus.stopFromTask()
    }

    /// Whether an Avahi daemon answers on the machine's own system bus (then nothing private is needed).
    public static func systemDaemonIsReachable() async -> Bool {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/dbus-send") else { return false }
        let output = try? await ChildOutput.run("/usr/bin/dbus-send", ["--system", "--print-reply", "--reply-timeout=1000", "--dest=org.freedesktop.Avahi", "/",
                                                                       "org.freedesktop.Avahi.Server.GetVersionString"])
        return output?.termination == .exited(0)
    }

    private static func run(_ executable: String, _ arguments: [String]) async throws {
        let output = try await ChildOutput.run(executable, arguments)
        guard output.termination == .exited(0) else {
            throw PrivateDaemonError("\(executable) \(arguments.joined(separator: " ")) \(output.termination): \(output.standardError)")
        }
    }
}
