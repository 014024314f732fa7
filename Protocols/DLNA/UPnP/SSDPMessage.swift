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

    /// Reads a datagram; nil for anything that is not an SSDP message.
    public init?(_ bytes: some Collection<UInt8>) {
        guard bytes.count <= Self.maximumLength, let text = String(validating: bytes, as: UTF8.self) else { return nil }
        var lines = text.split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r\n" }.map { $0.trimmed }
        while lines.last?.isEmpty == true { lines.removeLast() }
        guard let start = lines.first, start.hasSuffix("HTTP/1.1") || start.hasPrefix("HTTP/1.") else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            if line.isEmpty { break }
            guard let colon = line.firstIndex(of: ":") else { return nil }
            let name = line[..<colon].trimmed.lowercased()
            if headers[name] == nil { headers[name] = line[line.index(after: colon)...].trimmed }
        }
        self.init(startLine: start, headers: headers)
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
