import Foundation
import MediaRouteIPC
import PrivateDaemons
import Synchronization

/// A network namespace of the test's own for `mediaroute doctor` to run in, with a veth pair
/// (both ends inside, so nothing reaches the machine's network): `multicast` says whether its
/// interface `doc0` can multicast, `carrier` whether its peer `doc1` is up (else doc0 is up with
/// NO-CARRIER), `route` whether 224.0.0.0/4 is routed to it. Named
/// `mediaroute-PID-...`, so a killed run's namespace is swept by the next private network.
final class DoctorNamespace: Sendable {
    let name: String
    let interface = "doc0"
    private static let serials = Atomic<Int>(0)
    static let ip = "/usr/sbin/ip"

    private init(name: String) { self.name = name }

    /// Runs `body` in a new namespace, deleted afterwards (what runs in it killed by PID).
    static func with<T>(multicast: Bool = true, carrier: Bool = true, route: Bool = true, _ body: (DoctorNamespace) async throws -> T) async throws -> T {
        let serial = serials.add(1, ordering: .relaxed).newValue
        let namespace = DoctorNamespace(name: "mediaroute-\(getpid())-doctor\(serial)")
        return try await withTearDown {
            try await namespace.make(subnet: "10.232.\(serial % 254 + 1)", multicast: multicast, carrier: carrier, route: route)
            return try await body(namespace)
        } tearDown: {
            await namespace.destroy()
        }
    }

    private func make(subnet: String, multicast: Bool, carrier: Bool, route: Bool) async throws {
        try await Self.ip("netns", "add", name)
        try await Self.ip("-n", name, "link", "set", "lo", "up")
        try await Self.ip("-n", name, "link", "add", interface, "type", "veth", "peer", "name", "doc1")
        try await Self.ip("-n", name, "addr", "add", subnet + ".1/24", "dev", interface)
        if !multicast { try await Self.ip("-n", name, "link", "set", interface, "multicast", "off") }
        try await Self.ip("-n", name, "link", "set", interface, "up")
        if carrier { try await Self.ip("-n", name, "link", "set", "doc1", "up") }
        if route { try await Self.ip("-n", name, "route", "add", "224.0.0.0/4", "dev", interface) }
    }

    /// Runs `argv` inside the namespace (`ip netns exec` execs it: same PID).
    func run(_ argv: [String], environment: [String: String] = [:], timeout: Duration = .seconds(30)) async throws -> ChildOutput {
        var variables = ProcessInfo.processInfo.environment
        variables.merge(environment) { $1 }
        return try await ChildOutput.run(Self.ip, ["netns", "exec", name] + argv, environment: variables.map { "\($0.key)=\($0.value)" }, timeout: timeout)
    }

    private func destroy() async {
        if let pids = try? await ChildOutput.run(Self.ip, ["netns", "pids", name], timeout: .seconds(5)) {
            for pid in pids.standardOutput.split(separator: "\n").compactMap({ pid_t($0) }) { kill(pid, SIGKILL) }
        }
        _ = try? await ChildOutput.run(Self.ip, ["netns", "delete", name], timeout: .seconds(5))
    }

    static func ip(_ arguments: String...) async throws {
        let output = try await ChildOutput.run(ip, arguments, timeout: .seconds(10))
        guard output.termination == .exited(0) else {
            throw PrivateDaemonError("ip \(arguments.joined(separator: " ")) \(output.termination): \(output.standardError)")
        }
    }
}
