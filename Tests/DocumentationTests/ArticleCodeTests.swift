import Foundation
import Testing

/// The articles' Swift is this target's code: building the target compiles it, and these tests keep
/// each article's copy the same as the compiled one, so a snippet cannot rot while the API changes.
@Suite("DocC articles")
struct ArticleCodeTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let catalogs = ["Sources/MediaDevice/MediaDevice.docc", "Sources/AVSystemRouting/AVSystemRouting.docc", "Sources/NowPlaying/NowPlaying.docc"]

    static func files(in folder: String, ending suffix: String) throws -> [URL] {
        try FileManager.default.contentsOfDirectory(at: root.appendingPathComponent(folder), includingPropertiesForKeys: nil)
            .filter { $0.lastPathComponent.hasSuffix(suffix) }.sorted { $0.path < $1.path }
    }

    /// Fenced blocks of one language, each with the line it starts on.
    static func blocks(_ language: String, in text: String) -> [(line: Int, body: [String])] {
        var found: [(Int, [String])] = [], current: (Int, [String])?
        for (number, line) in text.components(separatedBy: "\n").enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if var open = current {
                if trimmed == "```" { found.append(open); current = nil } else { open.1.append(line); current = open }
            } else if trimmed == "```\(language)" {
                current = (number + 1, [])
            }
        }
        return found
    }

    /// Lines as compared: indentation and blank lines do not count, and `@main` (which a test target
    /// cannot carry) is the article's own.
    static func normalized(_ lines: [String]) -> [String] {
        lines.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty && $0 != "@main" }
    }

    /// Whether `block` occurs in `source` in order; a `// ...` line in it stands for lines left out.
    static func occurs(_ block: [String], in source: [String]) -> Bool {
        let pieces = block.split(separator: "// ...", omittingEmptySubsequences: true).map(Array.init)
        var from = 0
        for piece in pieces {
            guard let start = (from..<max(from, source.count - piece.count + 1)).first(where: { Array(source[$0..<$0 + piece.count]) == piece }) else {
                return false
            }
            from = start + piece.count
        }
        return true
    }

    @Test func everySwiftBlockIsCompiledCode() throws {
        let sources = try Self.files(in: "Tests/DocumentationTests", ending: ".swift").filter { $0.lastPathComponent != "ArticleCodeTests.swift" }
            .map { Self.normalized(try String(contentsOf: $0, encoding: .utf8).components(separatedBy: "\n")) }
        var checked = 0
        for catalog in Self.catalogs {
            for article in try Self.files(in: catalog, ending: ".md") {
                for block in Self.blocks("swift", in: try String(contentsOf: article, encoding: .utf8)) {
                    let lines = Self.normalized(block.body)
                    #expect(sources.contains { Self.occurs(lines, in: $0) },
                            "\(catalog)/\(article.lastPathComponent):\(block.line): this Swift is not in Tests/DocumentationTests as written")
                    checked += 1
                }
            }
        }
        #expect(checked > 10)
    }

    @Test func everyJSONBlockParses() throws {
        for catalog in Self.catalogs {
            for article in try Self.files(in: catalog, ending: ".md") {
                for block in Self.blocks("json", in: try String(contentsOf: article, encoding: .utf8)) {
                    #expect(throws: Never.self, "\(article.lastPathComponent):\(block.line)") {
                        try JSONSerialization.jsonObject(with: Data(block.body.joined(separator: "\n").utf8))
                    }
                }
            }
        }
    }
}
