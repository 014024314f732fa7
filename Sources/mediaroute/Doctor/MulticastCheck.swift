import Foundation
import MediaRouteIPC

/// Interfaces that are up with a carrier (LOWER_UP), MULTICAST and an IPv4 address, and the route multicast to mDNS's
/// and SSDP's groups takes.
///
/// Read with `ip -j` (iproute2): its JSON is stable across versions, and `ip route get` asks the
/// kernel the very lookup a socket that names no interface makes, policy rules and all; doing the
/// same over rtnetlink here would be a netlink parser for one answer.
struct MulticastCheck {
    static let ip = "/usr/sbin/ip"
    static let groups = [("224.0.0.251", "mDNS"), ("239.255.255.250", "SSDP")]

    struct Interface {
        let name: String
        let flags: Set<String>
        let addresses: [String]
        var isUp: Bool { flags.contains("UP") }
        /// Its link is up too: a cable in, a Wi-Fi association, a veth's peer up (`NO-CARRIER` else).
        var hasCarrier: Bool { flags.contains("LOWER_UP") }
        var canMulticast: Bool { isUp && hasCarrier && flags.contains("MULTICAST") && !addresses.isEmpty }
    }

    func run() async -> [Diagnosis] {
        guard FileManager.default.isExecutableFile(atPath: Self.ip) else {
            return [Diagnosis("multicast", "interfaces", .skipped, "the interfaces were not looked at",
                              fix: "\(Self.ip) is missing (apt-get install iproute2)")]
        }
        let interfaces: [Interface]
        do {
            interfaces = try await Self.interfaces()
        } catch {
            return [Diagnosis("multicast", "interfaces", .skipped, "the interfaces were not looked at", fix: "\(error)")]
        }
        var diagnoses: [Diagnosis] = []
        let candidates = interfaces.filter { $0.isUp && !$0.flags.contains("LOOPBACK") }
        for interface in candidates {
            let addresses = interface.addresses.isEmpty ? "no IPv4 address" : interface.addresses.joined(separator: ", ")
            if interface.canMulticast {
                diagnoses.append(Diagnosis("multicast", interface.name, .ok, "\(interface.name) (\(addresses)) is up and can multicast"))
            } else if !interface.hasCarrier {
                diagnoses.append(Diagnosis("multicast", interface.name, .warning,
                                           "\(interface.name) (\(addresses)) is up but has no carrier (no LOWER_UP): its link is down, nothing is sent or heard through it",
                                           fix: "connect it: plug its cable in, join its Wi-Fi network, or bring up the other end of the link"))
            } else if !interface.flags.contains("MULTICAST") {
                diagnoses.append(Diagnosis("multicast", interface.name, .warning,
                                           "\(interface.name) (\(addresses)) is up without MULTICAST: nothing is discovered through it",
                                           fix: "if devices are on its network, `ip link set \(interface.name) multicast on`"))
            }
        }
        let usable = interfaces.filter { $0.canMulticast && !$0.flags.contains("LOOPBACK") }
        if usable.isEmpty {
            let seen = interfaces.map { "\($0.name) <\($0.flags.sorted().joined(separator: ","))> \($0.addresses.joined(separator: " "))" }
            diagnoses.append(Diagnosis("multicast", "interfaces", .problem,
                                       "no network interface is up with a carrier, MULTICAST and an IPv4 address: mDNS and SSDP reach no device beyond this machine",
                                       fix: "bring up the interface of the network the devices are on, connected, with an address and multicast on (`ip link set IF up multicast on`)",
                                       details: seen))
        }
        for (group, what) in Self.groups {
            diagnoses.append(await route(to: group, what, interfaces: interfaces, usable: usable))
        }
        return diagnoses
    }

    /// The route a socket that names no interface takes to `group`. Our drivers and Avahi name
    /// each interface themselves, so a missing route is a warning: other programs (many renderers'
    /// and control points' SSDP, joins to a group on "any" interface) fail with "Network is unreachable".
    private func route(to group: String, _ what: String, interfaces: [Interface], usable: [Interface]) async -> Diagnosis {
        let fixRoute = "`ip route add 224.0.0.0/4 dev \(usable.first?.name ?? "IF")` (the interface of the devices' network)"
        guard let output = try? await ChildOutput.run(Self.ip, ["-j", "route", "get", group], timeout: .seconds(5)) else {
            return Diagnosis("multicast", group, .skipped, "the route to \(group) (\(what)) was not looked at", fix: "\(Self.ip) could not be run")
        }
        guard output.termination == .exited(0), let route = (try? JSONReader.parse(Array(output.standardOutput.utf8)))?.arrayValue?.first?.objectValue,
              let device = route["dev"]?.stringValue else {
            let why = output.standardError.trimmingCharacters(in: .whitespacesAndNewlines)
            return Diagnosis("multicast", group, .warning,
                             "no route covers \(group) (\(what)): `ip route get \(group)` says \"\(why.isEmpty ? "no route" : why)\"; programs that send to it without naming an interface fail",
                             fix: fixRoute)
        }
        if let interface = interfaces.first(where: { $0.name == device }), interface.isUp, !interface.hasCarrier {
            return Diagnosis("multicast", group, .warning,
                             "multicast to \(group) (\(what)) leaves by \(device), which has no carrier: programs that do not name an interface send it nowhere",
                             fix: "connect \(device), or route the groups to the interface of the devices' network: \(fixRoute)")
        }
        if let interface = interfaces.first(where: { $0.name == device }), !interface.canMulticast {
            return Diagnosis("multicast", group, .warning,
                             "multicast to \(group) (\(what)) leaves by \(device), which cannot multicast (a VPN or point-to-point link?): programs that do not name an interface send it nowhere",
                             fix: fixRoute)
        }
        return Diagnosis("multicast", group, .ok, "multicast to \(group) (\(what)) leaves by \(device)")
    }

    static func interfaces() async throws -> [Interface] {
        let output = try await ChildOutput.run(ip, ["-j", "-4", "addr", "show"], timeout: .seconds(5))
        let links = try await ChildOutput.run(ip, ["-j", "link", "show"], timeout: .seconds(5))
        guard output.termination == .exited(0), links.termination == .exited(0),
              let withAddresses = (try? JSONReader.parse(Array(output.standardOutput.utf8)))?.arrayValue,
              let all = (try? JSONReader.parse(Array(links.standardOutput.utf8)))?.arrayValue else {
            throw CLIError("`ip -j addr show` did not answer JSON: \(output.standardError)\(links.standardError)")
        }
        var addresses: [String: [String]] = [:]
        for entry in withAddresses {
            guard let object = entry.objectValue, let name = object["ifname"]?.stringValue else { continue }
            addresses[name] = (object["addr_info"]?.arrayValue ?? []).compactMap { info in
                guard let local = info.objectValue?["local"]?.stringValue else { return nil }
                return info.objectValue?["prefixlen"]?.integerValue.map { "\(local)/\($0)" } ?? local
            }
        }
        return all.compactMap { entry in
            guard let object = entry.objectValue, let name = object["ifname"]?.stringValue else { return nil }
            let flags = Set((object["flags"]?.arrayValue ?? []).compactMap(\.stringValue))
            return Interface(name: name, flags: flags, addresses: addresses[name] ?? [])
        }
    }
}
