/// One entry of a renderer's `GetProtocolInfo` Sink list: `protocol:network:contentFormat:additionalInfo`
/// (ConnectionManager:1 §2.5.2), e.g. `http-get:*:audio/mpeg:*`.
public struct ProtocolInfo: Sendable, Hashable, CustomStringConvertible {
    public let transport: String
    public let network: String
    public let contentFormat: String
    public let additionalInfo: String
    /// The MIME type without parameters, lower-cased, in its usual spelling (read once: a
    /// renderer's list is matched against often).
    let baseType: String

    public init?(_ text: some StringProtocol) {
        var text = String(text)
        guard let entry = text.withUTF8({ ProtocolInfo(bytes: $0, $0.indices) }) else { return nil }
        self = entry
    }

    /// One entry of `bytes`: a renderer's list is a few hundred entries.
    private init?(bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) {
        guard let fields = Self.fields(bytes, range) else { return nil }
        func text(_ field: Range<Int>) -> String { String(decoding: UnsafeBufferPointer(rebasing: bytes[field]), as: UTF8.self) }
        self.init(transport: text(fields.transport), network: text(fields.network), contentFormat: text(fields.contentFormat),
                  additionalInfo: text(fields.additionalInfo))
    }

    private typealias Fields = (transport: Range<Int>, network: Range<Int>, contentFormat: Range<Int>, additionalInfo: Range<Int>)

    /// The four fields of the entry in `range`, found in one pass and each trimmed; nil without
    /// three colons, or with no protocol or content format.
    private static func fields(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Fields? {
        var colons = (first: -1, second: -1, third: -1)
        for index in range where bytes[index] == UInt8(ascii: ":") {
            if colons.first < 0 { colons.first = index } else if colons.second < 0 { colons.second = index } else { colons.third = index; break }
        }
        guard colons.third >= 0 else { return nil }
        let fields = (transport: trimmed(bytes, range.lowerBound..<colons.first), network: trimmed(bytes, colons.first + 1..<colons.second),
                      contentFormat: trimmed(bytes, colons.second + 1..<colons.third), additionalInfo: trimmed(bytes, colons.third + 1..<range.upperBound))
        guard !fields.transport.isEmpty, !fields.contentFormat.isEmpty else { return nil }
        return fields
    }

    private static func trimmed(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Range<Int> {
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A }
        var (start, end) = (range.lowerBound, range.upperBound)
        while start < end, isSpace(bytes[start]) { start += 1 }
        while end > start, isSpace(bytes[end - 1]) { end -= 1 }
        return start..<end
    }

    /// The entries of a comma-separated list, as field ranges, for `list` and `summary`, until
    /// `body` returns false.
    private static func forEachEntry(of text: String, _ body: (UnsafeBufferPointer<UInt8>, Range<Int>) -> Bool) {
        var text = text
        text.withUTF8 { bytes in
            var start = 0
            for index in 0...bytes.count where index == bytes.count || bytes[index] == UInt8(ascii: ",") {
                guard body(bytes, start..<index) else { return }
                start = index + 1
            }
        }
    }

    public init(transport: String = "http-get", network: String = "*", contentFormat: String, additionalInfo: String = "*") {
        (self.transport, self.network, self.contentFormat, self.additionalInfo) = (transport, network, contentFormat, additionalInfo)
        baseType = Self.canonicalType(contentFormat)
    }

    public var description: String { "\(transport):\(network):\(contentFormat):\(additionalInfo)" }

    /// The comma-separated list a renderer gives.
    public static func list(_ text: String) -> [ProtocolInfo] {
        var entries: [ProtocolInfo] = []
        forEachEntry(of: text) { bytes, range in
            if let entry = ProtocolInfo(bytes: bytes, range) { entries.append(entry) }
            return true
        }
        return entries
    }

    /// Whether a list has HTTP entries, and whether any takes sound or pictures (as the entries'
    /// `baseType` would tell), found without making a value of each entry: a renderer is listed
    /// on this, and its whole list (164 entries from gmediarender) read after.
    public struct Summary: Sendable, Hashable {
        public var fetchesOverHTTP = false
        public var rendersAudio = false
        public var rendersVideo = false
    }

    public static func summary(of text: String) -> Summary {
        var summary = Summary()
        forEachEntry(of: text) { bytes, range in
            // ASCII, compared without case where MIME types are (the aliases `baseType` applies
            // keep the top-level type).
            func field(_ field: Range<Int>, startsWith prefix: String.UTF8View, ignoringCase: Bool) -> Bool {
                guard field.count >= prefix.count else { return false }
                return zip(bytes[field], prefix).allSatisfy { byte, wanted in
                    (ignoringCase && byte >= 0x41 && byte <= 0x5A ? byte + 0x20 : byte) == wanted
                }
            }
            guard let fields = Self.fields(bytes, range), fields.transport.count == 8,
                  field(fields.transport, startsWith: "http-get".utf8, ignoringCase: false) else { return true }
            summary.fetchesOverHTTP = true
            if field(fields.contentFormat, startsWith: "audio/".utf8, ignoringCase: true) { summary.rendersAudio = true }
            if field(fields.contentFormat, startsWith: "video/".utf8, ignoringCase: true) { summary.rendersVideo = true }
            // A TV's list says all there is to say long before its end.
            return !(summary.rendersAudio && summary.rendersVideo)
        }
        return summary
    }

    /// The MIME type before its parameters, trimmed, ASCII lower-cased (MIME types are ASCII;
    /// `lowercased()` is Unicode-aware and costs far more).
    private static func base(of type: String) -> String {
        var type = type
        return type.withUTF8 { bytes in
            let end = bytes.firstIndex(of: UInt8(ascii: ";")) ?? bytes.count
            let base = bytes[trimmed(bytes, 0..<end)].map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 0x20 : $0 }
            return String(decoding: base, as: UTF8.self)
        }
    }

    /// Whether an HTTP resource of `mimeType` matches this entry (wildcards allowed, and the
    /// several spellings of one type: renderers list `audio/x-wav` for what servers call `audio/wav`).
    public func accepts(_ mimeType: String) -> Bool { accepts(canonical: Self.canonicalType(mimeType)) }

    /// `accepts` for a type already made canonical: a list is matched entry by entry.
    func accepts(canonical wanted: String) -> Bool {
        guard transport == "http-get" || transport == "*" else { return false }
        let offered = baseType
        if offered == "*" || offered == "*/*" || offered == wanted { return true }
        if offered.hasSuffix("/*") { return wanted.hasPrefix(offered.dropLast()) }
        return false
    }

    /// The type to announce for `mimeType` when this entry accepted it: the renderer's own
    /// spelling, unless it is a wildcard.
    public func announcing(_ mimeType: String) -> String { contentFormat.contains("*") ? mimeType : contentFormat }

    /// A parameter of the content format, e.g. `rate` of `audio/L16;rate=44100;channels=2`.
    public func parameter(_ name: String) -> String? {
        for part in contentFormat.split(separator: ";").dropFirst() {
            let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmed }
            if pair.count == 2, pair[0].lowercased() == name.lowercased() { return pair[1] }
        }
        return nil
    }

    private static let aliases: [String: String] = [
        "audio/x-wav": "audio/wav", "audio/wave": "audio/wav", "audio/vnd.wave": "audio/wav", "audio/mp3": "audio/mpeg", "audio/x-mp3": "audio/mpeg",
        "audio/x-flac": "audio/flac", "audio/x-aac": "audio/aac", "audio/x-m4a": "audio/mp4", "audio/l16": "audio/l16", "video/x-mp4": "video/mp4",
        "video/avi": "video/x-msvideo", "video/mkv": "video/x-matroska",
    ]

    private static func canonical(_ type: String) -> String { aliases[type] ?? type }

    /// The MIME type as entries are matched on: without parameters, lower-cased, in its usual spelling.
    static func canonicalType(_ mimeType: String) -> String { canonical(base(of: mimeType)) }
}

extension [ProtocolInfo] {
    /// The first entry that takes `mimeType` over HTTP.
    public func accepting(_ mimeType: String) -> ProtocolInfo? {
        let wanted = ProtocolInfo.canonicalType(mimeType)
        return first { $0.accepts(canonical: wanted) }
    }

    /// Whether the renderer shows pictures, not only sound: a TV, as far as a picker cares.
    /// Only what it fetches over HTTP counts: video offered over RTSP alone is not ours to send.
    public var rendersVideo: Bool { contains { $0.transport == "http-get" && $0.baseType.hasPrefix("video/") } }
}
