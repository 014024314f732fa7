/// A firewall's chains as the doctor reads them, from nftables or iptables: enough to say whether
/// the UDP packets discovery needs (`Packet`) are dropped before anything accepts them.
struct FirewallRuleset {
    struct Chain {
        /// How people name it: "chain input of table inet filter", "INPUT (iptables, filter)".
        let title: String
        /// The hook it hangs on (`input`, `output`, ...), nil for a chain only jumped to.
        let hook: String?
        let dropsByPolicy: Bool
        let rules: [Rule]
    }

    struct Rule {
        enum Verdict { case accept, drop, jump(String), other }
        /// The rule as its tool shows it, or where it is ("handle 7").
        let text: String
        let verdict: Verdict
        /// Whether the rule applies to the packet.
        let applies: @Sendable (Packet) -> Applies
        /// What to run to remove it, if known.
        let removal: String?
    }

    enum Applies {
        /// Its conditions hold for the packet (it names the port, or all of UDP, or everything): it decides for it.
        case yes
        case no
        /// It depends on something else (connection state, addresses, part of a port range): not counted either way.
        case sometimes
    }

    /// A UDP packet discovery needs through: a query or announcement to the service's port, a
    /// unicast reply from it to the ephemeral port our query was sent from, or our own query.
    struct Packet: Sendable {
        enum Kind: Sendable { case query, reply, sent }
        let port: Int
        /// "mDNS", "SSDP".
        let service: String
        let kind: Kind
        let sourcePorts: ClosedRange<Int>
        let destinationPorts: ClosedRange<Int>
        /// Sent to the service's group (else unicast to this host).
        let multicast: Bool

        var inbound: Bool { kind != .sent }
        /// `meta pkttype` / `--pkt-type` of it.
        var packetType: String { multicast ? "multicast" : "host" }
        /// `fib daddr type` / `--dst-type` of it.
        var destinationType: String { multicast ? "multicast" : "local" }

        /// Linux's ephemeral ports (net.ipv4.ip_local_port_range): where replies to our queries arrive.
        static let ephemeral = 32768...60999

        /// The packets of each service: mDNS queries and announcements come from port 5353 (RFC 6762),
        /// SSDP's NOTIFY and M-SEARCH from any port.
        static func of(_ services: [(port: Int, name: String)]) -> [Packet] {
            services.flatMap { service -> [Packet] in
                let senders = service.port == 5353 ? 5353...5353 : 1...65535
                let ours = service.port == 5353 ? 5353...5353 : ephemeral
                return [Packet(port: service.port, service: service.name, kind: .query, sourcePorts: senders, destinationPorts: service.port...service.port, multicast: true),
                        Packet(port: service.port, service: service.name, kind: .reply, sourcePorts: service.port...service.port, destinationPorts: ephemeral, multicast: false),
                        Packet(port: service.port, service: service.name, kind: .sent, sourcePorts: ours, destinationPorts: service.port...service.port, multicast: true)]
            }
        }

        /// What the packet is, for a sentence: "UDP to port 5353 (mDNS queries and announcements)".
        var what: String {
            switch kind {
            case .query: "UDP to port \(port) (\(service) \(port == 1900 ? "announcements and searches" : "queries and announcements"), multicast)"
            case .reply: "UDP from port \(port) to an ephemeral port (unicast replies to our \(port == 1900 ? "M-SEARCH" : "\(service) queries"))"
            case .sent: "UDP sent to port \(port) (our \(port == 1900 ? "M-SEARCH" : "\(service) queries"))"
            }
        }

        /// A rule that lets it through, in nft's words and iptables'.
        var acceptRule: (nft: String, iptables: String) {
            switch kind {
            case .query: ("udp dport \(port) accept", "-p udp --dport \(port) -j ACCEPT")
            case .reply: ("udp sport \(port) udp dport \(Self.ephemeral.lowerBound)-\(Self.ephemeral.upperBound) accept",
                          "-p udp --sport \(port) --dport \(Self.ephemeral.lowerBound):\(Self.ephemeral.upperBound) -j ACCEPT")
            case .sent: ("udp dport \(port) accept", "-p udp --dport \(port) -j ACCEPT")
            }
        }
    }

    struct Drop {
        let packet: Packet
        let chain: String
        let rule: String?
        let removal: String?
    }

    let source: String
    let chains: [String: Chain]

    /// Hooks where a drop stops discovery: what arrives, and what we send.
    static let inboundHooks: Set<String> = ["input", "prerouting", "INPUT", "PREROUTING"]
    static let outboundHooks: Set<String> = ["output", "OUTPUT"]

    /// For each packet, the first rule (in each chain hooked where it passes, jumps followed) that
    /// drops it, or the chain's policy when nothing accepts it.
    func drops(of packets: [Packet]) -> [Drop] {
        var found: [Drop] = []
        for chain in chains.values.sorted(by: { $0.title < $1.title }) {
            guard let hook = chain.hook else { continue }
            for packet in packets where (packet.inbound ? Self.inboundHooks : Self.outboundHooks).contains(hook) {
                switch decide(packet, in: chain, depth: 0) {
                case .accepted: break
                case .dropped(let rule, let removal): found.append(Drop(packet: packet, chain: chain.title, rule: rule, removal: removal))
                case .undecided:
                    if chain.dropsByPolicy { found.append(Drop(packet: packet, chain: chain.title, rule: nil, removal: nil)) }
                }
            }
        }
        return found
    }

    private enum Decision { case accepted, dropped(String, String?), undecided }

    private func decide(_ packet: Packet, in chain: Chain, depth: Int) -> Decision {
        for rule in chain.rules where rule.applies(packet) == .yes {
            switch rule.verdict {
            case .accept: return .accepted
            case .drop: return .dropped(rule.text, rule.removal)
            case .jump(let target):
                guard depth < 8, let next = chains[target] else { continue }
                let decision = decide(packet, in: next, depth: depth + 1)
                if case .undecided = decision { continue }
                return decision
            case .other: continue
            }
        }
        return .undecided
    }

    /// How much of a packet's ports a rule's port ranges hold.
    enum Cover {
        case all, none, some

        /// `ranges` over `span`: all of it, none of it, or part.
        init(_ ranges: [ClosedRange<Int>], _ span: ClosedRange<Int>) {
            var covered = 0, next = span.lowerBound
            for range in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) where range.upperBound >= next && range.lowerBound <= span.upperBound {
                let low = max(range.lowerBound, next), high = min(range.upperBound, span.upperBound)
                covered += high - low + 1
                next = high + 1
            }
            self = covered == 0 ? .none : covered == span.count ? .all : .some
        }

        var negated: Cover {
            switch self {
            case .all: .none
            case .none: .all
            case .some: .some
            }
        }
    }
}
