import Foundation
import MediaRouteIPC
import Synchronization

/// A private LAN for tests: a controller namespace (where the DLNA driver and the test's own control
/// point run) with a bridge, and host namespaces (renderers) attached to it by veth pairs.
///
/// Multicast (SSDP) and unicast cross the bridge as on a real LAN, and nothing reaches the machine's
/// own interfaces. Each network has namespaces of its own, so tests run side by side; its /24 differs
/// from the other networks of this process only to keep logs readable (networks never share a link).
/// Needs root. `destroy()` (or `withNetwork`) stops what runs inside and deletes every namespace.
public final class PrivateNetwork: Sendable {
    public let controllerNamespace: String
    /// The controller's address on the bridge: where renderers reach servers run by the controller.
    public let controllerAddress: String
    private let namePrefix: String
    private let subnet: String
    private let state = Mutex(State())

    private struct State {
        var namespaces: [String] = []
        var hostCount = 0
        var renderers: [ObjectIdentifier: PrivateRenderer] = [:]
        var destroyed = false
    }

    static let ip = "/usr/sbin/ip"
    private static let bridge = "br0"
    private static let serials = Atomic<Int>(0)

    private init(serial: Int) {
        namePrefix = "mediaroute-\(getpid())-\(serial)"
        subnet = "10.231.\(serial % 254 + 1)"
        controllerNamespace = namePrefix + "-lan"
        controllerAddress = subnet + ".1"
    }

    /// Makes the controller namespace and its bridge.
    public static func create() async throws -> PrivateNetwork {
        guard getuid() == 0 else { throw PrivateDaemonError("a private network needs network namespaces, and creating them needs root") }
        guard FileManager.default.isExecutableFile(atPath: ip) else { throw PrivateDaemonError("\(ip) is missing (apt-get install iproute2)") }
        await sweepAbandoned()
        let network = PrivateNetwork(serial: serials.add(1, ordering: .relaxed).newValue)
        do {
            try await network.addNamespace(network.controllerNamespace)
            try await network.makeBridge()
        } catch {
            await network.destroy()
            throw error
        }
        return network
    }

    /// Namespaces of ours whose maker is gone (a test run or benchmark killed before it could
    /// tear down): what still runs in them is killed by PID and they are deleted, so a crash
    /// leaves no renderer multicasting and no namespace for longer than the next run.
    static func sweepAbandoned() async {
        guard let list = try? await ChildOutput.run(ip, ["netns", "list"], timeout: .seconds(5)) else { return }
        for line in list.standardOutput.split(separator: "\n") {
            let name = String(line.split(separator: " ").first ?? "")
            let parts = name.split(separator: "-")
            guard parts.count >= 3, parts[0] == "mediaroute", let maker = pid_t(parts[1]), maker != getpid(),
                  kill(maker, 0) != 0, errno == ESRCH else { continue }
            if let pids = try? await ChildOutput.run(ip, ["netns", "pids", name], timeout: .seconds(5)) {
                for pid in pids.standardOutput.split(separator: "\n").compactMap({ pid_t($0) }) { kill(pid, SIGKILL) }
            }
            _ = try? await ChildOutput.run(ip, ["netns", "delete", name], timeout: .seconds(5))
        }
    }

    /// Runs `body` on a new network and destroys it afterwards, also when `body` throws.
    public static func withNetwork<T>(_ body: (PrivateNetwork) async throws -> T) async throws -> T {
        let network = try await create()
        return try await withTearDown { try await body(network) } tearDown: { await network.destroy() }
    }

    /// A new namespace on the LAN, with the next address, its interface up and multicast routed to it.
    public func addHost() async throws -> PrivateHost {
        let index = try state.withLock { state in
            guard !state.destroyed else { throw PrivateDaemonError("the private network \(controllerNamespace) was destroyed: make a new one to add hosts") }
            guard state.hostCount < 253 else { throw PrivateDaemonError("the private network \(controllerNamespace) is full: a /24 holds 253 hosts") }
            state.hostCount += 1
            return state.hostCount
        }
        let host = PrivateHost(namespace: "\(namePrefix)-host\(index)", address: "\(subnet).\(index + 1)", interface: "eth0", network: self)
        let port = "port\(index)"
        try await addNamespace(host.namespace)
        try await ip("-n", controllerNamespace, "link", "add", port, "type", "veth", "peer", "name", host.interface, "netns", host.namespace)
        try await ip("-n", controllerNamespace, "link", "set", port, "master", Self.bridge)
        try await ip("-n", controllerNamespace, "link", "set", port, "up")
        try await ip("-n", host.namespace, "addr", "add", host.address + "/24", "dev", host.interface)
        try await ip("-n", host.namespace, "link", "set", host.interface, "up")
        try await ip("-n", host.namespace, "route", "add", "224.0.0.0/4", "dev", host.interface)
        return host
    }

    /// Deletes the controller's bridge and makes it again, the hosts' ports attached anew: the same
    /// name and address on a new interface (a new index), as an adapter unplugged and plugged back in.
    public func rebuildBridge() async throws {
        try await ip("-n", controllerNamespace, "link", "del", Self.bridge)
        try await makeBridge()
        for index in 0..<state.withLock({ $0.hostCount }) {
            try await ip("-n", controllerNamespace, "link", "set", "port\(index + 1)", "master", Self.bridge)
        }
    }

    /// The controller's bridge, with its address and the multicast route.
    private func makeBridge() async throws {
        // No IGMP snooping: the bridge floods multicast to every port, whatever joins it has seen.
        try await ip("-n", controllerNamespace, "link", "add", Self.bridge, "type", "bridge", "mcast_snooping", "0")
        try await ip("-n", controllerNamespace, "addr", "add", controllerAddress + "/24", "dev", Self.bridge)
        try await ip("-n", controllerNamespace, "link", "set", Self.bridge, "up")
        try await ip("-n", controllerNamespace, "route", "add", "224.0.0.0/4", "dev", Self.bridge)
    }

    /// The argv prefix that runs a program inside the controller namespace. `ip netns exec` execs the
    /// program (same PID, same parent) and keeps inherited descriptors, so a driver manifest's
    /// executable and arguments can start with it and the driver still finds its socket at fd 3.
    public var controllerCommandPrefix: [String] { commandPrefix(in: controllerNamespace) }

    /// The argv prefix that runs a program inside `namespace`.
    public func commandPrefix(in namespace: String) -> [String] { [Self.ip, "netns", "exec", namespace] }

    /// Runs `argv` (a path, or a name looked up on PATH) to completion in `namespace`, for curl and
    /// the like; killed when `timeout` passes (its termination then says SIGKILL).
    public func run(_ argv: [String], in namespace: String, timeout: Duration = .seconds(10)) async throws -> ChildOutput {
        guard !argv.isEmpty else { throw PrivateDaemonError("nothing to run in \(namespace): the command is empty") }
        let prefix = commandPrefix(in: namespace)
        return try await ChildOutput.run(prefix[0], Array(prefix.dropFirst()) + argv, timeout: timeout)
    }

    /// Stops every renderer started on it, kills whatever else still runs in its namespaces (by PID),
    /// and deletes them. Safe to call twice.
    public func destroy() async {
        let (renderers, namespaces) = state.withLock { state in
            defer {
                state.renderers = [:]
                state.namespaces = []
                state.destroyed = true
            }
            return (Array(state.renderers.values), state.namespaces)
        }
        for renderer in renderers { await renderer.kill() }
        for namespace in namespaces.reversed() {
            if let pids = try? await ChildOutput.run(Self.ip, ["netns", "pids", namespace], timeout: .seconds(5)) {
                for pid in pids.standardOutput.split(separator: "\n").compactMap({ pid_t($0) }) { kill(pid, SIGKILL) }
            }
            _ = try? await ChildOutput.run(Self.ip, ["netns", "delete", namespace], timeout: .seconds(5))
        }
    }

    /// Every namespace this network made and has not deleted.
    public var namespaces: [String] { state.withLock { $0.namespaces } }

    /// Records a running renderer, for `destroy()` to stop; throws once the network is destroyed.
    func adopt(_ renderer: PrivateRenderer) throws {
        try state.withLock { state in
            guard !state.destroyed else { throw PrivateDaemonError("the private network \(controllerNamespace) was destroyed: no renderer can start on it") }
            state.renderers[ObjectIdentifier(renderer)] = renderer
        }
    }

    func release(_ renderer: PrivateRenderer) {
        _ = state.withLock { $0.renderers.removeValue(forKey: ObjectIdentifier(renderer)) }
    }

    /// Adds a namespace with loopback up and IPv6 duplicate-address detection off: with it on,
    /// libupnp cannot bind for ~2 s after an address is added.
    private func addNamespace(_ namespace: String) async throws {
        try state.withLock { state in
            guard !state.destroyed else { throw PrivateDaemonError("the private network \(controllerNamespace) was destroyed") }
            state.namespaces.append(namespace)
        }
        try await ip("netns", "add", namespace)
        try await ip("-n", namespace, "link", "set", "lo", "up")
        let output = try await run(["/bin/sh", "-c", "echo 0 > /proc/sys/net/ipv6/conf/all/accept_dad && echo 0 > /proc/sys/net/ipv6/conf/default/accept_dad"],
                                   in: namespace)
        guard output.termination == .exited(0) else {
            throw PrivateDaemonError("cannot turn off IPv6 duplicate-address detection in \(namespace): \(output.standardError)")
        }
    }

    private func ip(_ arguments: String...) async throws {
        let output = try await ChildOutput.run(Self.ip, arguments, timeout: .seconds(10))
        guard output.termination == .exited(0) else {
            throw PrivateDaemonError("ip \(arguments.joined(separator: " ")) \(output.termination): \(output.standardError)")
        }
    }
}
