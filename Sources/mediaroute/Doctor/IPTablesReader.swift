import Foundation

/// iptables' rules as `iptables-save` (or `ip6tables-save`) prints them, as a `FirewallRuleset`.
enum IPTablesReader {
    static func ruleset(_ saved: String, tool: String) -> FirewallRuleset {
        var chains: [String: (hook: String?, policyDrops: Bool, rules: [FirewallRuleset.Rule])] = [:]
        var table = ""
        let builtIn: Set<String> = ["INPUT", "OUTPUT", "FORWARD", "PREROUTING", "POSTROUTING"]
        for raw in saved.split(separator: "\n") {
            let line = String(raw)
            if line.hasPrefix("*") { table = String(line.dropFirst()); continue }
            if line.hasPrefix(":") {
                let words = line.dropFirst().split(separator: " ")
                guard let name = words.first.map(String.init) else { continue }
                chains["\(table) \(name)"] = (builtIn.contains(name) ? name : nil, words.count > 1 && words[1] == "DROP", [])
                continue
            }
            guard line.hasPrefix("-A ") else { continue }
            let words = line.split(separator: " ").map(String.init)
            guard words.count >= 2 else { continue }
            let key = "\(table) \(words[1])"
            chains[key]?.rules.append(rule(words, line: line, table: table, tool: tool))
        }
        return FirewallRuleset(source: tool, chains: chains.reduce(into: [:]) { result, entry in
            let name = entry.key.split(separator: " ").last.map(String.init) ?? entry.key
            let table = entry.key.split(separator: " ").first.map(String.init) ?? ""
            result[entry.key] = FirewallRuleset.Chain(title: "chain \(name) of table \(table) (\(tool))", hook: entry.value.hook,
                                                      dropsByPolicy: entry.value.policyDrops, rules: entry.value.rules)
        })
    }

    private static func rule(_ words: [String], line: String, table: String, tool: String) -> FirewallRuleset.Rule {
        var verdict = FirewallRuleset.Rule.Verdict.other
        var proto: String?
        var ports: [(ClosedRange<Int>, negated: Bool)] = []
        var conditional = false, onState = false
        var index = 2
        var negate = false
        while index < words.count {
            let word = words[index]
            let value = index + 1 < words.count ? words[index + 1] : ""
            switch word {
            case "!": negate = true; index += 1; continue
            case "-p", "--protocol": proto = negate ? "!" + value : value; index += 1
            case "--dport", "--sport", "--destination-port", "--source-port", "--dports", "--sports":
                for part in value.split(separator: ",") {
                    let bounds = part.split(separator: ":").compactMap { Int($0) }
                    if let low = bounds.first { ports.append((low...(bounds.count > 1 ? max(low, bounds[1]) : low), negate)) }
                }
                index += 1
            case "--state", "--ctstate": onState = true; index += 1
            case "-s", "-d", "--source", "--destination", "--src-range", "--dst-range": conditional = true; index += 1
            case "-i", "-o", "-m", "--in-interface", "--out-interface": index += 1
            case "-j", "-g":
                switch value {
                case "ACCEPT": verdict = .accept
                case "DROP", "REJECT": verdict = .drop
                case "RETURN", "LOG", "": verdict = .other
                default: verdict = .jump("\(table) \(value)")
                }
                index += 1
            default:
                if word.hasPrefix("-") && !["--match"].contains(word) { conditional = true }
            }
            negate = false
            index += 1
        }
        let namesPort = !ports.isEmpty
        let applies: @Sendable (Int) -> FirewallRuleset.Applies = { [proto, ports, conditional, onState] port in
            if let proto {
                let udp = ["udp", "17", "all"].contains(proto.trimmingCharacters(in: CharacterSet(charactersIn: "!")))
                if udp == proto.hasPrefix("!") { return .no }
            }
            if !ports.isEmpty {
                let hit = ports.contains { $0.0.contains(port) != $0.negated }
                if !hit { return .no }
            }
            if onState || (conditional && !namesPort) { return .sometimes }
            return .yes
        }
        let command = tool.replacingOccurrences(of: "-save", with: "")
        return FirewallRuleset.Rule(text: "\"\(line)\"", verdict: verdict, applies: applies,
                                    removal: "\(command) -t \(table) -D \(words.dropFirst().joined(separator: " "))")
    }
}
