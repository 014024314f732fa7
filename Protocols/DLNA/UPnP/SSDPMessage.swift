import Foundation

/// One SSDP datagram: HTTP's start line and headers over UDP (UDA 2.0 §1), no body.
public struct SSDPMessage: Sendable, Hashable {
    /// "M-SEARCH * HTTP/1.1", "NOTIFY * HTTP/1.1" or "HTTP/1.1 200 OK".
    public var startLine: String
    /// Header names lower-cased: SSDP senders disagree on case.
    public var headers: [String: String]

    public init(startLine: String, headers: [String: String]) {
        self.startLine = startLine
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { first, _ in first })
    }

    public subscript(_ name: String) -> String? { headers[name.lowercased()] }

    /// SSDP datagrams fit one Ethernet frame; anything much larger is not one.
    public static let maximumLength = 8192

    /// Reads a datagram; nil for anything that is not an SSDP message. Byte by byte: a renderer's
    /// answer is read while the person waits, and splitting it into strings first cost 20-50 µs.
    public init?(_ bytes: some Collection<UInt8>) {
        guard bytes.count <= Self.maximumLength, String(validating: bytes, as: UTF8.self) != nil else { return nil }
        let bytes = Array(bytes)
        var lines: [ArraySlice<UInt8>] = []
        var start = 0
        for index in bytes.indices where bytes[index] == 0x0A {  // LF; a CR before it is trimmed
            lines.append(bytes[start..<index])
            start = index + 1
        }
        lines.append(bytes[start...])
        while let last = lines.last, Self.trimmed(last).isEmpty { lines.removeLast() }
        guard let first = lines.first else { return nil }
        let startLine = String(decoding: Self.trimmed(first), as: UTF8.self)
        guard startLine.hasSuffix("HTTP/1.1") || startLine.hasPrefix("HTTP/1.") else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            let line = Self.trimmed(line)
            if line.isEmpty { break }
            guard let colon = line.firstIndex(of: 0x3A) else { return nil }
            // Header names are ASCII: lower-cased byte by byte, not through Unicode's tables.
            let name = String(decoding: Self.trimmed(line[..<colon]).map { (0x41...0x5A).contains($0) ? $0 + 0x20 : $0 }, as: UTF8.self)
            if headers[name] == nil { headers[name] = String(decoding: Self.trimmed(line[(colon + 1)...]), as: UTF8.self) }
        }
        self.startLine = startLine
        self.headers = headers
    }

    /// Without leading and trailing spaces, tabs, CRs and LFs.
    private static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A }
        guard let first = bytes.firstIndex(where: { !isSpace($0) }), let last = bytes.lastIndex(where: { !isSpace($0) }) else { return [] }
        return bytes[first...last]
    }

    /// The datagram's bytes, headers in the order given.
    public static func encode(startLine: String, _ headers: KeyValuePairs<String, String>) -> [UInt8] {
        Array((([startLine] + headers.map { "\($0.key): \($0.value)" }).joined(separator: "\r\n") + "\r\n\r\n").utf8)
    }

    /// A search for `target` (UDA 2.0 §1.3.2); `mx` is how many seconds devices may wait to answer.
    public static func search(for target: String, mx: Int) -> [UInt8] {
        encode(startLine: "M-SEARCH * HTTP/1.1", ["HOST": "\(UPnP.multicastGroup):\(UPnP.ssdpPort)", "MAN": "\"ssdp:discover\"",
                                                  "MX": String(mx), "ST": target, "USER-AGENT": UPnP.userAgent])
    }
}
