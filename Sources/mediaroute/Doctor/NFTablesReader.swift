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
        return FirewallRuleset.Rule(text: text, verdict: verdict, applies: { port in applies(matches, unknown: unknown, to: port) },
                                    removal: "nft delete rule \(family) \(table) \(chain) handle \(handle)")
    }

    /// Whether a rule with these matches applies to UDP to or from `port`.
    static func applies(_ matches: [JSONObject], unknown: Bool, to port: Int) -> FirewallRuleset.Applies {
        var namesPort = false, conditional = unknown, onState = false
        for match in matches {
            let op = match["op"]?.stringValue ?? "=="
            let left = match["left"]?.objectValue, right = match["right"]
            let positive = op == "==" || op == "in"
            guard positive || op == "!=" else { conditional = true; continue }
            if let payload = left?["payload"]?.objectValue, let field = payload["field"]?.stringValue, field == "dport" || field == "sport" {
                let proto = payload["protocol"]?.stringValue ?? "th"
                guard proto == "udp" || proto == "th" else { return .no }
                guard let contains = contains(right, port: port) else { conditional = true; continue }
                if contains != positive { return .no }
                if positive { namesPort = true }
            } else if let key = left?["meta"]?.objectValue?["key"]?.stringValue, key == "l4proto" {
                if containsUDP(right) != positive { return .no }
            } else if let payload = left?["payload"]?.objectValue, let field = payload["field"]?.stringValue, field == "protocol" || field == "nexthdr" {
                if containsUDP(right) != positive { return .no }
            } else if let key = left?["meta"]?.objectValue?["key"]?.stringValue, ["iifname", "oifname", "iif", "oif", "nfproto", "iiftype"].contains(key) {
                continue  // which interface or family: the rule still decides for the port there
            } else if left?["ct"] != nil {
                onState = true
            } else {
                conditional = true  // addresses, marks, limits...
            }
        }
        if onState || (conditional && !namesPort) { return .sometimes }
        return .yes
    }

    private static func contains(_ value: JSONValue?, port: Int) -> Bool? {
        guard let value else { return nil }
        if let number = value.integerValue { return number == port }
        if let range = value.objectValue?["range"]?.arrayValue, range.count == 2, let low = range[0].integerValue, let high = range[1].integerValue {
            return low <= port && port <= high
        }
        if let set = value.objectValue?["set"]?.arrayValue {
            var answer = false
            for element in set {
                guard let inside = contains(element, port: port) else { return nil }
                answer = answer || inside
            }
            return answer
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
