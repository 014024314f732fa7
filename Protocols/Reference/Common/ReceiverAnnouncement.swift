import MediaDevice

/// What a receiver says about itself in its DNS-SD TXT record (PROTOCOL.md §1).
public struct ReceiverAnnouncement: Sendable, Hashable {
    public enum Authorization: String, Sendable, Hashable, CaseIterable {
        case none, pin4, pin6, password

        public var method: MediaOutputDevice.AuthorizationMethod {
            switch self {
            case .none: .none
            case .pin4: .numericCode(length: .fourCharacter)
            case .pin6: .numericCode(length: .sixCharacter)
            case .password: .password
            }
        }
    }

    public var id: String
    public var model: String
    public var deviceType: MediaOutputDevice.DeviceType
    public var capabilities: MediaOutputDevice.Capabilities
    public var authorization: Authorization
    public var volumeControl: MediaOutputDevice.VolumeControl
    public var canMute: Bool

    public init(id: String, model: String, deviceType: MediaOutputDevice.DeviceType, capabilities: MediaOutputDevice.Capabilities,
                authorization: Authorization, volumeControl: MediaOutputDevice.VolumeControl, canMute: Bool) {
        self.id = id
        self.model = model
        self.deviceType = deviceType
        self.capabilities = capabilities
        self.authorization = authorization
        self.volumeControl = volumeControl
        self.canMute = canMute
    }

    private static let capabilityNames: [(MediaOutputDevice.Capabilities, String)] = [
        (.urlPlayback, "url"), (.realtimeAudioStreaming, "audio"), (.realtimeVideoStreaming, "video"),
    ]

    public var txt: [(String, String)] {
        [("v", String(ReferenceProtocol.version)), ("id", id), ("model", model), ("type", deviceType.rawValue),
         ("caps", Self.capabilityNames.filter { capabilities.contains($0.0) }.map(\.1).joined(separator: ",")),
         ("auth", authorization.rawValue), ("vol", volumeControl.rawValue), ("mute", canMute ? "1" : "0")]
    }

    /// Reads a TXT record; the error says which key is missing or wrong.
    public init(txt: [String: String]) throws(ReferenceProtocolError) {
        func bad(_ reason: String) -> ReferenceProtocolError { ReferenceProtocolError(.badRequest, "TXT record: \(reason)") }
        guard let version = txt["v"] else { throw bad("no \"v\" (protocol version)") }
        guard version == String(ReferenceProtocol.version) else { throw bad("version \(version) is not \(ReferenceProtocol.version)") }
        guard let id = txt["id"], Self.isIdentifier(id) else { throw bad("\"id\" must be 1-64 of A-Z a-z 0-9 . _ -") }
        guard let caps = txt["caps"] else { throw bad("no \"caps\"") }
        var capabilities: MediaOutputDevice.Capabilities = []
        for name in caps.split(separator: ",") {
            if let known = Self.capabilityNames.first(where: { $0.1 == name }) { capabilities.insert(known.0) }
        }
        guard !capabilities.isEmpty else { throw bad("\"caps\" names no capability this controller knows (\(caps))") }
        guard let auth = txt["auth"].flatMap(Authorization.init(rawValue:)) else { throw bad("\"auth\" must be none, pin4, pin6 or password") }
        self.id = id
        model = String((txt["model"] ?? "").prefix(64))
        deviceType = txt["type"].flatMap(MediaOutputDevice.DeviceType.init(rawValue:)) ?? .unknown
        self.capabilities = capabilities
        authorization = auth
        volumeControl = txt["vol"].flatMap(MediaOutputDevice.VolumeControl.init(rawValue:)) ?? .none
        canMute = txt["mute"] == "1"
    }

    /// 1–64 of `[A-Za-z0-9._-]`: device and controller ids.
    public static func isIdentifier(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 64 && text.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x2E || byte == 0x5F || byte == 0x2D
        }
    }
}
