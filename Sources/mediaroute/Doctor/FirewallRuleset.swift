/// A firewall's chains as the doctor reads them, from nftables or iptables: enough to say whether
/// UDP to or from a port (5353, 1900) is dropped before anything accepts it.
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
        /// Whether the rule applies to UDP with this port as source or destination.
        let applies: @Sendable (Int) -> Applies
        /// What to run to remove it, if known.
        let removal: String?
    }

    enum Applies {
        /// It names the port (or all of UDP, or everything): it decides for that traffic.
        case yes
        case no
        /// It depends on something else (connection state, addresses): not counted either way.
        case sometimes
    }

    struct Drop {
        let port: Int
        let chain: String
        let rule: String?
        let removal: String?
    }

    let source: String
    let chains: [String: Chain]

    /// Hooks where a drop stops discovery: what arrives, and what we send.
    static let hooks: Set<String> = ["input", "output", "prerouting", "INPUT", "OUTPUT", "PREROUTING"]

    /// For each port, the first rule (in each hooked chain, jumps followed) that drops it, or the
    /// chain's policy when nothing accepts it.
    func drops(of ports: [Int]) -> [Drop] {
        var found: [Drop] = []
        for chain in chains.values.sorted(by: { $0.title < $1.title }) where chain.hook.map(Self.hooks.contains) ?? false {
            for port in ports {
                switch decide(port, in: chain, depth: 0) {
                case .accepted: break
                case .dropped(let rule, let removal): found.append(Drop(port: port, chain: chain.title, rule: rule, removal: removal))
                case .undecided:
                    if chain.dropsByPolicy { found.append(Drop(port: port, chain: chain.title, rule: nil, removal: nil)) }
                }
            }
        }
        return found
    }

    private enum Decision { case accepted, dropped(String, String?), undecided }

    private func decide(_ port: Int, in chain: Chain, depth: Int) -> Decision {
        for rule in chain.rules where rule.applies(port) == .yes {
            switch rule.verdict {
            case .accept: return .accepted
            case .drop: return .dropped(rule.text, rule.removal)
            case .jump(let target):
                guard depth < 8, let next = chains[target] else { continue }
                let decision = decide(port, in: next, depth: depth + 1)
                if case .undecided = decision { continue }
                return decision
            case .other: continue
            }
        }
        return .undecided
    }
}
