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
        let parts = text.split(separator: ":", maxSplits: 3, omittingEmptySubsequences: false).map { $0.trimmed }
        guard parts.count == 4, !parts[0].isEmpty, !parts[2].isEmpty else { return nil }
        self.init(transport: parts[0], network: parts[1], contentFormat: parts[2], additionalInfo: parts[3])
    }

    public init(transport: String = "http-get", network: String = "*", contentFormat: String, additionalInfo: String = "*") {
        (self.transport, self.network, self.contentFormat, self.additionalInfo) = (transport, network, contentFormat, additionalInfo)
        baseType = Self.canonical(Self.base(of: contentFormat))
    }

    public var description: String { "\(transport):\(network):\(contentFormat):\(additionalInfo)" }

    /// The comma-separated list a renderer gives.
    public static func list(_ text: String) -> [ProtocolInfo] { text.split(separator: ",").compactMap(ProtocolInfo.init) }

    private static func base(of type: String) -> String { type.split(separator: ";").first.map { $0.trimmed.lowercased() } ?? "" }

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
