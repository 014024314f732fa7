import Foundation
import MediaRouteIPC

/// Firewall rules that drop UDP 5353 (mDNS) or 1900 (SSDP): nftables (`nft -j list ruleset`) and
/// iptables (`iptables-save`, `ip6tables-save`), read and never changed.
struct FirewallCheck {
    static let ports = [(5353, "mDNS"), (1900, "SSDP")]
    static let tools = ["/usr/sbin/nft", "/usr/sbin/iptables-save", "/usr/sbin/ip6tables-save"]

    func run() async -> [Diagnosis] {
        var rulesets: [FirewallRuleset] = []
        var unread: [String] = []
        let present = Self.tools.filter { FileManager.default.isExecutableFile(atPath: $0) }
        guard !present.isEmpty else {
            return [Diagnosis("firewall", "firewall", .skipped, "skipped: no nft/iptables",
                              fix: "neither nft nor iptables-save is installed, so no rule of theirs can be read here")]
        }
        if present.contains("/usr/sbin/nft") {
            do {
                let json = try await Self.read("/usr/sbin/nft", ["-j", "list", "ruleset"])
                let text = try await Self.read("/usr/sbin/nft", ["-a", "list", "ruleset"])
                rulesets.append(try NFTablesReader.ruleset(json: json, text: text))
            } catch {
                unread.append("\(error)")
            }
        }
        for tool in present where tool.hasSuffix("-save") {
            do {
                let saved = try await Self.read(tool, [])
                // iptables-nft's rules are nftables rules, read above already.
                if saved.contains("iptables-nft-save"), rulesets.contains(where: { $0.source == "nftables" }) { continue }
                rulesets.append(IPTablesReader.ruleset(saved, tool: (tool as NSString).lastPathComponent))
            } catch {
                unread.append("\(error)")
            }
        }
        var diagnoses: [Diagnosis] = []
        for ruleset in rulesets {
            for drop in ruleset.drops(of: Self.ports.map(\.0)) {
                let what = "UDP \(drop.port) (\(Self.ports.first { $0.0 == drop.port }?.1 ?? ""))"
                if let rule = drop.rule {
                    diagnoses.append(Diagnosis("firewall", drop.chain, .problem, "\(rule) in \(drop.chain) drops \(what)",
                                               fix: "remove it (`\(drop.removal ?? "")`) or accept \(what) before it"))
                } else {
                    diagnoses.append(Diagnosis("firewall", drop.chain, .problem, "\(drop.chain) drops \(what) by its policy: no rule accepts it",
                                               fix: "accept it in that chain, e.g. a rule for `udp dport \(drop.port)` and `udp sport \(drop.port)` with verdict accept"))
                }
            }
        }
        if diagnoses.isEmpty, !rulesets.isEmpty {
            diagnoses.append(Diagnosis("firewall", "firewall", .ok,
                                       "no rule of \(rulesets.map(\.source).joined(separator: ", ")) drops UDP 5353 (mDNS) or 1900 (SSDP)"))
        }
        for why in unread {
            diagnoses.append(Diagnosis("firewall", "firewall", .skipped, "some rules were not read", fix: why))
        }
        return diagnoses
    }

    private static func read(_ tool: String, _ arguments: [String]) async throws -> String {
        let output = try await ChildOutput.run(tool, arguments, timeout: .seconds(5))
        guard output.termination == .exited(0) else {
            let why = output.standardError.trimmingCharacters(in: .whitespacesAndNewlines)
            let root = why.contains("ermission") || why.contains("not permitted") ? " (reading the firewall needs root: run `sudo mediaroute doctor`)" : ""
            throw CLIError("\(tool) \(arguments.joined(separator: " ")) \(output.termination): \(why)\(root)")
        }
        return output.standardOutput
    }
}
