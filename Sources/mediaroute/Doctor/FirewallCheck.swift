import Foundation
import MediaRouteIPC

/// Firewall rules that drop the UDP discovery needs, mDNS (5353) and SSDP (1900): queries and
/// announcements to the port, unicast replies from it to our ephemeral port, and what we send;
/// nftables (`nft -j list ruleset`) and iptables (`iptables-save`, `ip6tables-save`), read and never changed.
struct FirewallCheck {
    static let ports = [(5353, "mDNS"), (1900, "SSDP")]
    static let tools = ["/usr/sbin/nft", "/usr/sbin/iptables-save", "/usr/sbin/ip6tables-save"]
    /// The most of a tool's output read: a ruleset beyond it is not checked (and said so), never half-read.
    static let outputLimit = 16 << 20

    /// A tool's output longer than the limit.
    struct TooLarge: Error, CustomStringConvertible {
        let command: String
        let limit: Int
        var description: String { "`\(command)` printed more than \(limit >= 1 << 20 ? "\(limit >> 20) MiB" : "\(limit) bytes")" }
    }

    func run() async -> [Diagnosis] {
        var rulesets: [FirewallRuleset] = []
        var unread: [String] = [], tooLarge: [TooLarge] = []
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
            } catch let error as TooLarge {
                tooLarge.append(error)
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
            } catch let error as TooLarge {
                tooLarge.append(error)
            } catch {
                unread.append("\(error)")
            }
        }
        return Self.diagnoses(rulesets, unread: unread, tooLarge: tooLarge)
    }

    static func diagnoses(_ rulesets: [FirewallRuleset], unread: [String], tooLarge: [TooLarge]) -> [Diagnosis] {
        var diagnoses: [Diagnosis] = []
        let packets = FirewallRuleset.Packet.of(ports.map { (port: $0.0, name: $0.1) })
        for ruleset in rulesets {
            let nft = ruleset.source == "nftables"
            for drop in ruleset.drops(of: packets) {
                let accept = nft ? "`\(drop.packet.acceptRule.nft)`" : "`\(drop.packet.acceptRule.iptables)`"
                if let rule = drop.rule {
                    diagnoses.append(Diagnosis("firewall", drop.chain, .problem, "\(rule) in \(drop.chain) drops \(drop.packet.what)",
                                               fix: "remove it (`\(drop.removal ?? "")`) or accept that traffic before it (\(accept))"))
                } else {
                    diagnoses.append(Diagnosis("firewall", drop.chain, .problem, "\(drop.chain) drops \(drop.packet.what) by its policy: no rule accepts it",
                                               fix: "accept it in that chain: \(accept)"))
                }
            }
        }
        for cut in tooLarge {
            diagnoses.append(Diagnosis("firewall", "firewall", .warning, "ruleset too large to read whole: its rules were not checked",
                                       fix: "look for rules that drop UDP 5353 or 1900 yourself (\(cut))"))
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

    /// The tool's output, whole: `TooLarge` beyond `limit` bytes.
    static func read(_ tool: String, _ arguments: [String], limit: Int = outputLimit) async throws -> String {
        // One byte over the limit kept tells a cut output from one of exactly `limit` bytes.
        let output = try await ChildOutput.run(tool, arguments, outputLimit: limit + 1, timeout: .seconds(10))
        guard output.termination == .exited(0) else {
            let why = output.standardError.trimmingCharacters(in: .whitespacesAndNewlines)
            let root = why.contains("ermission") || why.contains("not permitted") ? " (reading the firewall needs root: run `sudo mediaroute doctor`)" : ""
            throw CLIError("\(tool) \(arguments.joined(separator: " ")) \(output.termination): \(why)\(root)")
        }
        guard output.standardOutput.utf8.count <= limit else { throw TooLarge(command: ([tool] + arguments).joined(separator: " "), limit: limit) }
        return output.standardOutput
    }
}
