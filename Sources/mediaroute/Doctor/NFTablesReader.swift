import Foundation
import MediaRouteIPC

/// nftables' ruleset as `nft -j list ruleset` gives it, with each rule's text from
/// `nft -a list ruleset` (matched by handle), as a `FirewallRuleset`.
enum NFTablesReader {
    static func ruleset(json: String, text: String) throws -> FirewallRuleset {
        guard let items = (try? JSONReader.parse(Array(json.utf8)))?.objectValue?["nftables"]?.arrayValue else {
            throw CLIError("`nft -j list ruleset` did not answer the JSON nftables documents")
        }
        let texts = ruleTexts(text)
        var chains: [String: (chain: JSONObject, rules: [FirewallRuleset.Rule])] = [:]
        var order: [String] = []
        for item in items {
            guard let object = item.objectValue else { continue }
            if let chain = object["chain"]?.objectValue {
                let key = Self.key(chain, chain["name"])
                chains[key] = (chain, [])
                order.append(key)
            } else if let rule = object["rule"]?.objectValue {
                let key = Self.key(rule, rule["chain"])
                guard chains[key] != nil else { continue }
                chains[key]?.rules.append(Self.rule(rule, texts: texts))
            }
        }
        var result: [String: FirewallRuleset.Chain] = [:]
        for key in order {
            guard let (chain, rules) = chains[key] else { continue }
            let family = chain["family"]?.stringValue ?? "?", table = chain["table"]?.stringValue ?? "?", name = chain["name"]?.stringValue ?? "?"
            result[key] = FirewallRuleset.Chain(title: "chain \(name) of table \(family) \(table) (nftables)", hook: chain["hook"]?.stringValue,
                                                dropsByPolicy: chain["policy"]?.stringValue == "drop", rules: rules)
        }
        return FirewallRuleset(source: "nftables", chains: result)
    }

    private static func key(_ object: JSONObject, _ chain: JSONValue?) -> String {
        "\(object["family"]?.stringValue ?? "") \(object["table"]?.stringValue ?? "") \(chain?.stringValue ?? "")"
    }

    private static func rule(_ rule: JSONObject, texts: [String: String]) -> FirewallRuleset.Rule {
        let expressions = (rule["expr"]?.arrayValue ?? []).compactMap(\.objectValue)
        let family = rule["family"]?.stringValue ?? "", table = rule["table"]?.stringValue ?? "", chain = rule["chain"]?.stringValue ?? ""
        let handle = rule["handle"]?.integerValue.map(String.init) ?? "?"
        var verdict = FirewallRuleset.Rule.Verdict.other
        for expression in expressions {
            if expression["accept"] != nil { verdict = .accept }
            if expression["drop"] != nil || expression["reject"] != nil { verdict = .drop }
            if let target = (expression["jump"] ?? expression["goto"])?.objectValue?["target"]?.stringValue { verdict = .jump("\(family) \(table) \(target)") }
        }
        let text = texts["\(family) \(table) \(chain) \(handle)"].map { "\"\($0)\" (handle \(handle))" } ?? "rule handle \(handle)"
        let matches = expressions.compactMap { $0["match"]?.objectValue }
        let unknown = expressions.contains { $0["xt"] != nil }
        return FirewallRuleset.Rule(text: text, verdict: verdict, applies: { packet in applies(matches, unknown: unknown, to: packet) },
                                    removal: "nft delete rule \(family) \(table) \(chain) handle \(handle)")
    }

    /// Whether a rule with these matches applies to `packet`.
    static func applies(_ matches: [JSONObject], unknown: Bool, to packet: FirewallRuleset.Packet) -> FirewallRuleset.Applies {
        var namesPacket = false, conditional = unknown, onState = false, partly = false
        for match in matches {
            let op = match["op"]?.stringValue ?? "=="
            let left = match["left"]?.objectValue, right = match["right"]
            let positive = op == "==" || op == "in"
            guard positive || op == "!=" else { conditional = true; continue }
            let meta = left?["meta"]?.objectValue?["key"]?.stringValue
            if let payload = left?["payload"]?.objectValue, let field = payload["field"]?.stringValue, field == "dport" || field == "sport" {
                let proto = payload["protocol"]?.stringValue ?? "th"
                guard proto == "udp" || proto == "th" else { return .no }
                guard let ranges = ports(right) else { conditional = true; continue }
                let cover = FirewallRuleset.Cover(ranges, field == "dport" ? packet.destinationPorts : packet.sourcePorts)
                switch positive ? cover : cover.negated {
                case .none: return .no
                case .some: partly = true
                case .all: namesPacket = true
                }
            } else if meta == "l4proto" {
                if containsUDP(right) != positive { return .no }
            } else if let payload = left?["payload"]?.objectValue, let field = payload["field"]?.stringValue, field == "protocol" || field == "nexthdr" {
                if containsUDP(right) != positive { return .no }
            } else if meta == "pkttype" {
                // `meta pkttype multicast drop`: every mDNS and SSDP packet to the groups.
                guard let types = names(right) else { conditional = true; continue }
                if types.contains(packet.packetType) != positive { return .no }
                namesPacket = true
            } else if let fib = left?["fib"]?.objectValue, fib["result"]?.stringValue == "type",
                      fib["flags"]?.stringValue ?? fib["flags"]?.arrayValue?.compactMap(\.stringValue).joined(separator: ",") == "daddr" {
                // `fib daddr type multicast drop`: the same, by the destination address.
                guard let types = names(right) else { conditional = true; continue }
                if types.contains(packet.destinationType) != positive { return .no }
                namesPacket = true
            } else if let meta, ["iifname", "oifname", "iif", "oif", "nfproto", "iiftype"].contains(meta) {
                continue  // which interface or family: the rule still decides for the packet there
            } else if left?["ct"] != nil {
                onState = true
            } else {
                conditional = true  // addresses, marks, limits...
            }
        }
        if onState || partly || (conditional && !namesPacket) { return .sometimes }
        return .yes
    }

    /// The ports a match's right side names (a port, a range, an anonymous set of them), nil for
    /// anything else (a named set, a map).
    private static func ports(_ value: JSONValue?) -> [ClosedRange<Int>]? {
        guard let value else { return nil }
        if let number = value.integerValue.map(Int.init) { return [number...number] }
        if let range = value.objectValue?["range"]?.arrayValue, range.count == 2,
           let low = range[0].integerValue.map(Int.init), let high = range[1].integerValue.map(Int.init) {
            return low <= high ? [low...high] : []
        }
        if let set = value.objectValue?["set"]?.arrayValue {
            var all: [ClosedRange<Int>] = []
            for element in set {
                guard let inside = ports(element) else { return nil }
                all += inside
            }
            return all
        }
        return nil
    }

    /// The words a match's right side names (`multicast`, `{ broadcast, multicast }`), nil for anything else.
    private static func names(_ value: JSONValue?) -> Set<String>? {
        guard let value else { return nil }
        if let name = value.stringValue { return [name] }
        if let set = value.objectValue?["set"]?.arrayValue {
            var all: Set<String> = []
            for element in set {
                guard let inside = names(element) else { return nil }
                all.formUnion(inside)
            }
            return all
        }
        return nil
    }

    private static func containsUDP(_ value: JSONValue?) -> Bool {
        guard let value else { return false }
        if let name = value.stringValue { return name == "udp" }
        if let number = value.integerValue { return number == 17 }
        return (value.objectValue?["set"]?.arrayValue ?? []).contains { containsUDP($0) }
    }

    /// Each rule's text in `nft -a list ruleset`, by "family table chain handle".
    static func ruleTexts(_ text: String) -> [String: String] {
        var texts: [String: String] = [:]
        var table = "", chain = ""
        for raw in text.split(separator: "\n") {
            let line = raw.trimmingCharacters(in: .whitespaces)
            let words = line.split(separator: " ")
            if words.first == "table", words.count >= 3 { table = "\(words[1]) \(words[2])"; chain = ""; continue }
            if words.first == "chain", words.count >= 2 { chain = String(words[1]); continue }
            guard !chain.isEmpty, let mark = line.range(of: " # handle ") else { continue }
            texts["\(table) \(chain) \(line[mark.upperBound...])"] = String(line[..<mark.lowerBound])
        }
        return texts
    }
}
