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
            let words = tokens(line)
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

    /// Options of the targets (after `-j TARGET`) that take an argument: never a condition.
    /// (Those a match shares a name with, `--mask`, `--to`, `--timeout`, are left out.)
    static let targetOptions: Set<String> = [
        "--reject-with", "--log-prefix", "--log-level", "--nflog-group", "--nflog-prefix", "--nflog-range", "--nflog-size", "--nflog-threshold",
        "--set-mark", "--set-xmark", "--and-mark", "--or-mark", "--xor-mark", "--nfmask", "--ctmask",
        "--to-destination", "--to-source", "--to-ports", "--queue-num", "--queue-balance", "--set-dscp", "--set-dscp-class", "--set-tos",
        "--set-mss", "--set-class", "--ttl-set", "--ttl-dec", "--ttl-inc", "--hl-set", "--hl-dec", "--hl-inc", "--ulog-prefix", "--ulog-nlgroup",
        "--ulog-cprange", "--ulog-qthreshold",
    ]

    private struct PortCondition {
        enum Side { case source, destination, either }
        let side: Side
        let ranges: [ClosedRange<Int>]
        let negated: Bool
    }

    private static func rule(_ words: [String], line: String, table: String, tool: String) -> FirewallRuleset.Rule {
        var verdict = FirewallRuleset.Rule.Verdict.other
        var proto: String?
        var ports: [PortCondition] = []
        var packetTypes: [(types: Set<String>, negated: Bool)] = []
        var destinationTypes: [(types: Set<String>, negated: Bool)] = []
        var conditional = false, onState = false
        var index = 2
        var negate = false
        var target = false
        while index < words.count {
            let word = words[index]
            let value = index + 1 < words.count ? words[index + 1] : ""
            // What follows the target is its options (iptables-save prints them last): none is a condition.
            if target { index += targetOptions.contains(word) ? 2 : 1; continue }
            switch word {
            case "!": negate = true; index += 1; continue
            case "-p", "--protocol": proto = negate ? "!" + value : value; index += 1
            case "--dport", "--sport", "--destination-port", "--source-port", "--dports", "--sports", "--ports", "--destination-ports", "--source-ports":
                var ranges: [ClosedRange<Int>] = []
                for part in value.split(separator: ",") {
                    let bounds = part.split(separator: ":", omittingEmptySubsequences: false).map { Int($0) }
                    let low = bounds.first.flatMap { $0 } ?? 0, high = bounds.count > 1 ? (bounds[1] ?? 65535) : low
                    if low <= high { ranges.append(low...high) }
                }
                let side: PortCondition.Side = word == "--ports" ? .either : ["--sport", "--sports", "--source-port", "--source-ports"].contains(word) ? .source : .destination
                ports.append(PortCondition(side: side, ranges: ranges, negated: negate))
                index += 1
            case "--pkt-type":
                packetTypes.append((Set(value.lowercased().split(separator: ",").map(String.init)), negate)); index += 1
            case "--dst-type":
                destinationTypes.append((Set(value.lowercased().split(separator: ",").map(String.init)), negate)); index += 1
            case "--state", "--ctstate": onState = true; index += 1
            case "-s", "-d", "--source", "--destination", "--src-range", "--dst-range", "--src-type": conditional = true; index += 1
            case "-i", "-o", "-m", "--match", "--in-interface", "--out-interface", "--comment": index += 1
            case "-j", "-g", "--jump", "--goto":
                switch value {
                case "ACCEPT": verdict = .accept
                case "DROP", "REJECT": verdict = .drop
                case "RETURN", "LOG", "NFLOG", "ULOG", "": verdict = .other
                default: verdict = .jump("\(table) \(value)")
                }
                index += 1
                target = true
            default:
                if targetOptions.contains(word) {
                    index += 1
                } else if word.hasPrefix("-") {
                    conditional = true
                }
            }
            negate = false
            index += 1
        }
        let namesPacket = !ports.isEmpty || !packetTypes.isEmpty || !destinationTypes.isEmpty
        let applies: @Sendable (FirewallRuleset.Packet) -> FirewallRuleset.Applies = { [proto, ports, packetTypes, destinationTypes, conditional, onState] packet in
            if let proto {
                let udp = ["udp", "17", "all"].contains(proto.trimmingCharacters(in: CharacterSet(charactersIn: "!")))
                if udp == proto.hasPrefix("!") { return .no }
            }
            var partly = false
            for condition in ports {
                let cover: FirewallRuleset.Cover
                switch condition.side {
                case .source: cover = FirewallRuleset.Cover(condition.ranges, packet.sourcePorts)
                case .destination: cover = FirewallRuleset.Cover(condition.ranges, packet.destinationPorts)
                case .either:
                    let (source, destination) = (FirewallRuleset.Cover(condition.ranges, packet.sourcePorts), FirewallRuleset.Cover(condition.ranges, packet.destinationPorts))
                    cover = source == .all || destination == .all ? .all : source == .none && destination == .none ? .none : .some
                }
                switch condition.negated ? cover.negated : cover {
                case .none: return .no
                case .some: partly = true
                case .all: break
                }
            }
            for condition in packetTypes where condition.types.contains(packet.packetType) == condition.negated { return .no }
            for condition in destinationTypes where condition.types.contains(packet.destinationType) == condition.negated { return .no }
            if onState || partly || (conditional && !namesPacket) { return .sometimes }
            return .yes
        }
        let command = tool.replacingOccurrences(of: "-save", with: "")
        return FirewallRuleset.Rule(text: "\"\(line)\"", verdict: verdict, applies: applies,
                                    removal: "\(command) -t \(table) -D \(line.dropFirst(3))")
    }

    /// A line's words as iptables-save quotes them: `--comment "two words"`, with `\"` and `\\` inside.
    static func tokens(_ line: String) -> [String] {
        var words: [String] = [], word = "", quoted = false, escaped = false, started = false
        for character in line {
            if escaped { word.append(character); escaped = false; continue }
            if quoted {
                if character == "\\" { escaped = true } else if character == "\"" { quoted = false } else { word.append(character) }
                continue
            }
            if character == "\"" { quoted = true; started = true; continue }
            if character == " " || character == "\t" {
                if started || !word.isEmpty { words.append(word) }
                word = ""; started = false
                continue
            }
            word.append(character)
        }
        if started || !word.isEmpty { words.append(word) }
        return words
    }
}
