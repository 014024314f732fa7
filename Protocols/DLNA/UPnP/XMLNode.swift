import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// A parsed XML element: UPnP's descriptions, SOAP envelopes, GENA property sets and LastChange
/// documents are small, so a whole tree is simpler to query than a streaming parser. Names are
/// local names (namespace prefixes dropped): renderers disagree on prefixes, never on local names.
public struct XMLNode: Sendable, Hashable {
    public var name: String
    public var attributes: [String: String]
    public var children: [XMLNode]
    /// The element's own character data, trimmed.
    public var text: String

    public init(name: String, attributes: [String: String] = [:], children: [XMLNode] = [], text: String = "") {
        self.name = name
        self.attributes = attributes
        self.children = children
        self.text = text
    }

    /// The first child named `name`.
    public func child(_ name: String) -> XMLNode? { children.first { $0.name == name } }

    /// Every child named `name`.
    public func children(_ name: String) -> [XMLNode] { children.filter { $0.name == name } }

    /// The first element down a path of child names.
    public func find(_ path: String...) -> XMLNode? {
        path.reduce(Optional(self)) { node, name in node?.child(name) }
    }

    /// The text of the first element down `path`, nil when absent or empty.
    public func text(_ path: String...) -> String? {
        let node = path.reduce(Optional(self)) { node, name in node?.child(name) }
        return node.flatMap { $0.text.isEmpty ? nil : $0.text }
    }

    /// Every element named `name` anywhere below this one, depth first.
    public func descendants(_ name: String) -> [XMLNode] {
        children.flatMap { ($0.name == name ? [$0] : []) + $0.descendants(name) }
    }

    /// Documents larger than this are refused before parsing: nothing UPnP sends is near it.
    public static let maximumDocumentLength = 1 << 20

    /// Parses a document; `what` names it in the error ("the description of 10.0.0.5").
    public static func parse(_ bytes: some Collection<UInt8>, what: String) throws(XMLError) -> XMLNode {
        guard bytes.count <= maximumDocumentLength else {
            throw XMLError("\(what) is \(bytes.count) bytes, over the limit of \(maximumDocumentLength)")
        }
        guard !bytes.isEmpty else { throw XMLError("\(what) is empty") }
        let parser = XMLParser(data: Data(bytes))
        parser.shouldProcessNamespaces = true
        parser.shouldResolveExternalEntities = false
        let builder = TreeBuilder()
        parser.delegate = builder
        guard parser.parse(), let root = builder.root else {
            let reason = builder.failure ?? parser.parserError.map { "\($0.localizedDescription)" } ?? "no root element"
            throw XMLError("\(what) is not well-formed XML (line \(parser.lineNumber)): \(reason)")
        }
        return root
    }
}

/// Why a document could not be read.
public struct XMLError: Error, Sendable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// Builds the tree from parser callbacks; lives for one `parse` on one thread.
private final class TreeBuilder: NSObject, XMLParserDelegate {
    private var stack: [(node: XMLNode, text: String)] = []
    var root: XMLNode?
    var failure: String?
    /// Deeper nesting than any UPnP document has is refused rather than recursed into.
    private static let maximumDepth = 64

    func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?,
                attributes: [String: String] = [:]) {
        guard stack.count < Self.maximumDepth else {
            failure = "elements nested deeper than \(Self.maximumDepth)"
            return parser.abortParsing()
        }
        let local = elementName.split(separator: ":").last.map(String.init) ?? elementName
        var plain: [String: String] = [:]
        for (key, value) in attributes { plain[key.split(separator: ":").last.map(String.init) ?? key] = value }
        stack.append((XMLNode(name: local, attributes: plain), ""))
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        guard !stack.isEmpty else { return }
        stack[stack.count - 1].text += string
    }

    func parser(_ parser: XMLParser, foundCDATA CDATABlock: Data) {
        guard !stack.isEmpty else { return }
        stack[stack.count - 1].text += String(decoding: CDATABlock, as: UTF8.self)
    }

    func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
        guard let (popped, text) = stack.popLast() else { return }
        var node = popped
        node.text = text.trimmed
        if stack.isEmpty { root = node } else { stack[stack.count - 1].node.children.append(node) }
    }
}

extension String {
    /// The text with XML's five special characters escaped, for element content and attributes.
    public var xmlEscaped: String {
        var out = ""
        out.reserveCapacity(utf8.count)
        for character in self {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            default: out.append(character)
            }
        }
        return out
    }
}
