import Yams

/// One value of the configuration file, with the file, its key and where it stands, read strictly:
/// each accessor either returns the value in the type and range asked for, or throws a problem
/// naming the line, the column, the key and what it must be.
struct ConfigurationNode {
    let node: Node
    /// The keys that lead here, e.g. `drivers."org.mediaroute.dlna".restart.intensity`.
    let key: String
    let path: String

    func problem(_ reason: String) -> ConfigurationProblem {
        ConfigurationProblem(path: path, line: node.mark?.line, column: node.mark?.column, reason: reason)
    }

    /// The members of a mapping, in file order, each checked against `allowed` (nil: any key).
    /// `key` is the member's name where it stands, for a problem with the name itself.
    func members(allowed: [String]?, what: String) throws(ConfigurationProblem) -> [(name: String, value: ConfigurationNode, key: ConfigurationNode)] {
        guard let mapping = node.mapping else { throw problem("\(key) must be \(what)") }
        var members: [(name: String, value: ConfigurationNode, key: ConfigurationNode)] = []
        for (name, value) in mapping {
            guard let scalar = name.scalar, !scalar.string.isEmpty else {
                throw ConfigurationNode(node: name, key: key, path: path).problem("a key in \(key) must be a name")
            }
            let child = key.isEmpty ? scalar.string : "\(key).\(scalar.string)"
            if let allowed, !allowed.contains(scalar.string) {
                let place = key.isEmpty ? "at the top level" : "in \(key)"
                throw ConfigurationNode(node: name, key: child, path: path)
                    .problem("unknown key \"\(scalar.string)\" \(place); the keys there are \(allowed.joined(separator: ", "))")
            }
            members.append((scalar.string, ConfigurationNode(node: value, key: child, path: path), ConfigurationNode(node: name, key: child, path: path)))
        }
        return members
    }

    /// A string: quoted, or plain if it is not empty or null.
    func string(_ what: String) throws(ConfigurationProblem) -> String {
        guard let scalar = node.scalar else { throw problem("\(key) must be \(what), not a \(node.mapping != nil ? "mapping" : "list")") }
        if scalar.style == .plain && ["", "~", "null", "Null", "NULL"].contains(scalar.string) {
            throw problem("\(key) has no value; give \(what), or leave the key out for the default")
        }
        return scalar.string
    }

    /// An absolute path.
    func absolutePath() throws(ConfigurationProblem) -> String {
        let value = try string("an absolute path")
        guard value.hasPrefix("/") else { throw problem("\(key) must be an absolute path (starting with /), not \"\(value)\"") }
        return value
    }

    /// A whole number written plainly, within `range`.
    func integer(in range: ClosedRange<Int>, unit: String = "") throws(ConfigurationProblem) -> Int {
        let what = "a whole number from \(range.lowerBound) to \(range.upperBound)\(unit)"
        guard let scalar = node.scalar, scalar.style == .plain, let value = Int(scalar.string) else {
            throw problem("\(key) must be \(what), not \(display)")
        }
        guard range.contains(value) else { throw problem("\(key) must be \(what), not \(value)") }
        return value
    }

    /// `true` or `false`, unquoted.
    func boolean() throws(ConfigurationProblem) -> Bool {
        guard let scalar = node.scalar, scalar.style == .plain, ["true", "false"].contains(scalar.string) else {
            throw problem("\(key) must be true or false, not \(display)")
        }
        return scalar.string == "true"
    }

    /// A list of items, each read by `item`.
    func list<Item>(of what: String, _ item: (ConfigurationNode) throws(ConfigurationProblem) -> Item) throws(ConfigurationProblem) -> [Item] {
        guard let sequence = node.sequence else { throw problem("\(key) must be a list of \(what), e.g. [\"/usr/lib/mediaroute/drivers\"]") }
        var items: [Item] = []
        for element in sequence { items.append(try item(ConfigurationNode(node: element, key: key, path: path))) }
        return items
    }

    /// How the value reads in a sentence.
    private var display: String {
        if let scalar = node.scalar {
            if scalar.style == .plain { return scalar.string.isEmpty ? "nothing" : scalar.string }
            return "\"\(scalar.string)\" (quoted)"
        }
        return node.mapping != nil ? "a mapping" : "a list"
    }
}
