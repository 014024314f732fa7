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

    /// One entry of `bytes` (its four fields found in one pass, each trimmed): a renderer's list
    /// is a few hundred entries, read while the person waits for the picker.
    private init?(bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) {
        var colons: [Int] = []
        colons.reserveCapacity(3)
        for index in range where bytes[index] == UInt8(ascii: ":") && colons.count < 3 { colons.append(index) }
        guard colons.count == 3 else { return nil }
        let transport = Self.trimmed(bytes, range.lowerBound..<colons[0])
        let contentFormat = Self.trimmed(bytes, colons[1] + 1..<colons[2])
        guard !transport.isEmpty, !contentFormat.isEmpty else { return nil }
        self.init(transport: transport, network: Self.trimmed(bytes, colons[0] + 1..<colons[1]), contentFormat: contentFormat,
                  additionalInfo: Self.trimmed(bytes, colons[2] + 1..<range.upperBound))
    }

    private static func trimmed(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> String {
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A }
        var (start, end) = (range.lowerBound, range.upperBound)
        while start < end, isSpace(bytes[start]) { start += 1 }
        while end > start, isSpace(bytes[end - 1]) { end -= 1 }
        return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
    }

    public init(transport: String = "http-get", network: String = "*", contentFormat: String, additionalInfo: String = "*") {
        (self.transport, self.network, self.contentFormat, self.additionalInfo) = (transport, network, contentFormat, additionalInfo)
        baseType = Self.canonical(Self.base(of: contentFormat))
    }

    public var description: String { "\(transport):\(network):\(contentFormat):\(additionalInfo)" }

    /// The comma-separated list a renderer gives.
    public static func list(_ text: String) -> [ProtocolInfo] {
        var text = text
        return text.withUTF8 { bytes in
            var entries: [ProtocolInfo] = []
            var start = 0
            for index in 0...bytes.count where index == bytes.count || bytes[index] == UInt8(ascii: ",") {
                if let entry = ProtocolInfo(bytes: bytes, start..<index) { entries.append(entry) }
                start = index + 1
            }
            return entries
        }
    }

    /// The MIME type before its parameters, trimmed, ASCII lower-cased (MIME types are ASCII;
    /// `lowercased()` is Unicode-aware and costs far more).
    private static func base(of type: String) -> String {
        var type = type
        return type.withUTF8 { bytes in
            let end = bytes.firstIndex(of: UInt8(ascii: ";")) ?? bytes.count
            let base = trimmed(bytes, 0..<end).utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 0x20 : $0 }
            return String(decoding: base, as: UTF8.self)
        }
    }

    /// Whether an HTTP resource of `mimeType` matches this entry (wildcards allowed, and the
    /// several spellings of one type: renderers list `audio/x-wav` for what servers call `audio/wav`).
    public func accepts(_ mimeType: String) -> Bool {
        guard transport == "http-get" || transport == "*" else { return false }
        let wanted = Self.canonical(Self.base(of: mimeType))
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
}

extension [ProtocolInfo] {
    /// The first entry that takes `mimeType` over HTTP.
    public func accepting(_ mimeType: String) -> ProtocolInfo? { first { $0.accepts(mimeType) } }

    /// Whether the renderer shows pictures, not only sound: a TV, as far as a picker cares.
    /// Only what it fetches over HTTP counts: video offered over RTSP alone is not ours to send.
    public var rendersVideo: Bool { contains { $0.transport == "http-get" && $0.baseType.hasPrefix("video/") } }
}
