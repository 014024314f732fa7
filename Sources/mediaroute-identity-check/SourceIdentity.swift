import Foundation

/// The protocol identifier a driver's code returns from `protocolType`, as far as it can be read
/// from the source without compiling it: `UTType(exportedAs: "literal")`, or `UTType(exportedAs: NAME)`
/// where NAME (`x`, `Self.x`, `Type.x`) is a `let`/`static let` of a string literal in the driver's
/// files or, failing that, in its dependencies' files. A value computed at run time (arguments,
/// environment, interpolation) cannot be seen: the supervisor still checks it at the handshake.
struct SourceIdentity: Sendable {
    struct Place: Sendable, Equatable {
        let file: String
        let line: Int
    }

    enum Finding: Sendable, Equatable {
        /// The identifier, where `protocolType` uses it, and where a named constant holding it is declared.
        case identifier(String, use: Place, declaration: Place?)
        /// `protocolType` is there but its value is computed: `expression` is what it is made from.
        case unreadable(expression: String, use: Place)
        /// No `protocolType` in the files given.
        case notFound
    }

    struct SourceFile: Sendable {
        let path: String
        let text: String
    }

    let sources: [SourceFile]
    let dependencySources: [SourceFile]

    init(sources: [String], dependencySources: [String]) {
        func read(_ path: String) -> SourceFile? {
            (try? String(contentsOfFile: path, encoding: .utf8)).map { SourceFile(path: path, text: $0) }
        }
        self.sources = sources.compactMap(read)
        self.dependencySources = dependencySources.compactMap(read)
    }

    /// Whether a type in the driver's own files declares conformance to MediaDeviceExtension.
    var declaresDriver: Bool {
        sources.contains { $0.text.contains(#/\b(?:class|struct|actor|extension)\s+\w+\s*:[^{]*\bMediaDeviceExtension\b/#) }
    }

    func find() -> Finding {
        // A declaration (`var/let protocolType`) or an assignment in an initialiser (`protocolType = ...`).
        let uses = #/(?:\b(?:var|let)\s+protocolType\b|\bprotocolType\s*=(?!=))/#
        let exportedAs = #/exportedAs:\s*(?:"(?<literal>(?:[^"\\]|\\.)*)"|(?<name>[A-Za-z_][A-Za-z0-9_.]*)|(?<other>[^)]*))/#
        for file in sources {
            for match in file.text.matches(of: uses) {
                let use = Place(file: file.path, line: TextPosition.line(of: match.range.lowerBound, in: file.text))
                let body = Self.expression(after: match.range.upperBound, in: file.text)
                guard let value = body.firstMatch(of: exportedAs) else {
                    // `let protocolType: UTType` with its value assigned in init: look at the assignment.
                    if body.contains("=") || body.contains("{") { return .unreadable(expression: body.trimmed, use: use) }
                    continue
                }
                if let literal = value.output.literal {
                    if literal.contains("\\(") { return .unreadable(expression: String(value.output.0), use: use) }
                    return .identifier(String(literal), use: use, declaration: nil)
                }
                if let name = value.output.name, let constant = constant(named: String(name.split(separator: ".").last ?? name)) {
                    return .identifier(constant.value, use: use, declaration: constant.place)
                }
                return .unreadable(expression: String(value.output.0), use: use)
            }
        }
        return .notFound
    }

    /// The text of the declaration or assignment that starts at `start`: the rest of its line, and
    /// while braces are open (a getter over several lines), the lines up to the closing one.
    private static func expression(after start: String.Index, in text: String) -> String {
        var depth = 0, end = start, lines = 0
        for index in text[start...].indices {
            let character = text[index]
            if character == "{" { depth += 1 }
            if character == "}" { depth -= 1; if depth < 0 { break } }
            if character == "\n" { lines += 1; if depth <= 0 || lines > 20 { break } }
            end = text.index(after: index)
        }
        return String(text[start..<end])
    }

    /// A `let`/`static let` of a string literal named `name`: first in the driver's own files, then in
    /// its dependencies'; nil when there is none or when several disagree.
    private func constant(named name: String) -> (value: String, place: Place)? {
        for files in [sources, dependencySources] {
            var found: [(value: String, place: Place)] = []
            for file in files {
                for match in file.text.matches(of: #/\blet\s+(?<name>[A-Za-z_][A-Za-z0-9_]*)\s*(?::\s*String\s*)?=\s*"(?<value>[^"\\]*)"/#)
                where match.output.name == name {
                    found.append((String(match.output.value), Place(file: file.path, line: TextPosition.line(of: match.range.lowerBound, in: file.text))))
                }
            }
            if let first = found.first {
                return found.allSatisfy { $0.value == first.value } ? first : nil
            }
        }
        return nil
    }
}

extension String {
    var trimmed: String { trimmingCharacters(in: .whitespacesAndNewlines) }
}

extension Substring {
    var trimmed: String { String(self).trimmed }
}
