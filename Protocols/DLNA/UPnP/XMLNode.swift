import CLibXML2
import Glibc

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
    ///
    /// libxml2 directly: Foundation's XMLParser, over the same libxml2, cost ten times as much per
    /// document in callbacks and bridged strings, and a renderer's description and answers are
    /// read while the person waits. Nothing is fetched (no network, no external DTD), entities
    /// are not substituted, and a document with a DTD is refused: UPnP's documents never carry
    /// one (SOAP forbids it), so one that does is an attack or a mistake.
    public static func parse(_ bytes: some Collection<UInt8>, what: String) throws(XMLError) -> XMLNode {
        guard bytes.count <= maximumDocumentLength else {
            throw XMLError("\(what) is \(bytes.count) bytes, over the limit of \(maximumDocumentLength)")
        }
        guard !bytes.isEmpty else { throw XMLError("\(what) is empty") }
        let bytes = Array(bytes)
        // Refused before libxml2 reads its internal subset and entities at all (raw "<!DOCTYPE"
        // appears nowhere else in a well-formed document but comments and CDATA, which UPnP's lack).
        if contains(bytes, "<!DOCTYPE") {
            throw XMLError("\(what) has a document type declaration, which UPnP documents never carry")
        }
        _ = libraryReady
        guard let context = xmlNewParserCtxt() else { throw XMLError("\(what) could not be read: out of memory") }
        defer { xmlFreeParserCtxt(context) }
        let options = Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOERROR.rawValue | XML_PARSE_NOWARNING.rawValue | XML_PARSE_NOCDATA.rawValue)
        let document = bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { xmlCtxtReadMemory(context, $0.baseAddress, Int32($0.count), nil, nil, options) }
        }
        guard let document else {
            let error = context.pointee.lastError
            let reason = error.message.map { String(cString: $0).trimmed } ?? "no root element"
            throw XMLError("\(what) is not well-formed XML (line \(error.line)): \(reason)")
        }
        defer { xmlFreeDoc(document) }
        guard let root = xmlDocGetRootElement(document) else { throw XMLError("\(what) is not well-formed XML: no root element") }
        return try node(root, depth: 1)
    }

    /// Whether `bytes` hold `needle`, compared in place: `firstRange(of:)` walked a 5 kB
    /// GetProtocolInfo answer in about 100 µs, more than libxml2 took to parse it.
    private static func contains(_ bytes: [UInt8], _ needle: StaticString) -> Bool {
        let pattern = UnsafeBufferPointer(start: needle.utf8Start, count: needle.utf8CodeUnitCount)
        guard let first = pattern.first else { return true }
        return bytes.withUnsafeBufferPointer { haystack in
            guard haystack.count >= pattern.count else { return false }
            for start in 0...(haystack.count - pattern.count) where haystack[start] == first {
                if memcmp(haystack.baseAddress! + start, pattern.baseAddress!, pattern.count) == 0 { return true }
            }
            return false
        }
    }

    /// libxml2 is set up once for the process, before any thread parses.
    private static let libraryReady: Void = xmlInitParser()

    /// Deeper nesting than any UPnP document has is refused rather than recursed into.
    private static let maximumDepth = 64

    private static func node(_ element: xmlNodePtr, depth: Int) throws(XMLError) -> XMLNode {
        guard depth <= maximumDepth else { throw XMLError("elements nested deeper than \(maximumDepth)") }
        var node = XMLNode(name: localName(element.pointee.name))
        var attribute = element.pointee.properties
        while let current = attribute {
            node.attributes[localName(current.pointee.name)] = text(of: current.pointee.children)
            attribute = current.pointee.next
        }
        var text: [UInt8] = []
        var child = element.pointee.children
        while let current = child {
            switch current.pointee.type {
            case XML_ELEMENT_NODE: node.children.append(try self.node(current, depth: depth + 1))
            case XML_TEXT_NODE, XML_CDATA_SECTION_NODE:
                if let content = current.pointee.content { text += UnsafeBufferPointer(start: content, count: strlen(content)) }
            default: break  // comments, processing instructions
            }
            child = current.pointee.next
        }
        node.text = String(decoding: text, as: UTF8.self).trimmed
        return node
    }

    /// A name without its prefix: renderers disagree on prefixes (and some use undeclared ones,
    /// which libxml2 keeps in the name).
    private static func localName(_ name: UnsafePointer<xmlChar>?) -> String {
        guard let name else { return "" }
        let full = String(cString: name)
        guard let colon = full.utf8.lastIndex(of: UInt8(ascii: ":")) else { return full }
        return String(full[full.utf8.index(after: colon)...])
    }

    /// The text of an attribute's value nodes.
    private static func text(of nodes: xmlNodePtr?) -> String {
        var bytes: [UInt8] = []
        var node = nodes
        while let current = node {
            if let content = current.pointee.content { bytes += UnsafeBufferPointer(start: content, count: strlen(content)) }
            node = current.pointee.next
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// Why a document could not be read.
public struct XMLError: Error, Sendable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
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
