/// A remote playback device a driver found: what the picker lists and what sessions target.
public struct MediaOutputDevice: Sendable, Hashable, Identifiable, CustomStringConvertible {
    /// What the device can do; real-time streaming arrives with `RealtimeSampleHandling`.
    public struct Capabilities: OptionSet, Sendable, Hashable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        public static let urlPlayback = Capabilities(rawValue: 1 << 0)
        public static let realtimeAudioStreaming = Capabilities(rawValue: 1 << 1)
        public static let realtimeVideoStreaming = Capabilities(rawValue: 1 << 2)

        static let names: [(Capabilities, String)] = [(.urlPlayback, "urlPlayback"), (.realtimeAudioStreaming, "realtimeAudioStreaming"),
                                                      (.realtimeVideoStreaming, "realtimeVideoStreaming")]
        public var names: [String] { Self.names.filter { contains($0.0) }.map(\.1) }
        public init?(names: [String]) {
            var value: Capabilities = []
            for name in names {
                guard let known = Self.names.first(where: { $0.1 == name }) else { return nil }
                value.insert(known.0)
            }
            self = value
        }
    }

    /// The kind of device, for the picker's symbol and the route's output port type.
    public enum DeviceType: String, Sendable, Hashable, CaseIterable {
        case tv, speaker, headphones, bluetoothSpeaker, car, receiver, setTopBox, computer, unknown
    }

    public enum VolumeControl: String, Sendable, Hashable, CaseIterable {
        /// Levels from 0 to 1: `setVolume(_:for:)` and `volume(for:)`.
        case absolute
        /// Steps up and down only: `changeVolume(by:for:)`.
        case relative
        case none
    }

    /// How a device wants the person to prove they may use it.
    public enum AuthorizationMethod: Sendable, Hashable {
        public enum CodeLength: Int, Sendable, Hashable {
            case fourCharacter = 4
            case sixCharacter = 6
        }
        case numericCode(length: CodeLength)
        case password
        case none
    }

    /// A host and port the device must be reachable at (checked by the system before activation).
    public struct NetworkEndpoint: Sendable, Hashable {
        public let host: String
        public let port: UInt16
        public init(host: String, port: UInt16) {
            self.host = host
            self.port = port
        }
    }

    /// Stable across discoveries of the same physical device (derive it from the protocol's device id).
    public let id: String
    public let displayName: String
    public let capabilities: Capabilities
    public let deviceType: DeviceType
    public let volumeControl: VolumeControl
    public let canMute: Bool
    public let requiredNetworkEndpoints: [NetworkEndpoint]

    /// Fails (returns nil) for input the picker could not show or the system could not route:
    /// an empty or over-long id or name, control characters, no capabilities, or an endpoint with
    /// an empty host or port 0.
    public init?(id: String, displayName: String, capabilities: Capabilities, deviceType: DeviceType = .unknown,
                 volumeControl: VolumeControl = .none, canMute: Bool = false, requiredNetworkEndpoints: [NetworkEndpoint] = []) {
        guard Self.problem(id: id, displayName: displayName, capabilities: capabilities, endpoints: requiredNetworkEndpoints) == nil else { return nil }
        self.id = id
        self.displayName = displayName
        self.capabilities = capabilities
        self.deviceType = deviceType
        self.volumeControl = volumeControl
        self.canMute = canMute
        self.requiredNetworkEndpoints = requiredNetworkEndpoints
    }

    /// Why these values cannot make a device, as a sentence; nil if they can.
    static func problem(id: String, displayName: String, capabilities: Capabilities, endpoints: [NetworkEndpoint]) -> String? {
        // ASCII, the usual text, byte by byte; other text scalar by scalar (C1 controls lie outside
        // ASCII): looking up every scalar's category cost tens of µs per device as it was listed.
        func printable(_ s: String) -> Bool {
            s.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F } || !s.unicodeScalars.contains { $0.properties.generalCategory == .control }
        }
        if id.isEmpty || id.utf8.count > 256 || !printable(id) { return "the device id must be 1 to 256 bytes without control characters" }
        if displayName.allSatisfy(\.isWhitespace) || (displayName.utf8.count > 128 && displayName.count > 128) || !printable(displayName) {
            return "the display name must be 1 to 128 printable characters"
        }
        if capabilities.isEmpty { return "a device needs at least one capability (urlPlayback, realtimeAudioStreaming, realtimeVideoStreaming)" }
        if let bad = endpoints.first(where: { $0.host.isEmpty || $0.port == 0 }) {
            return "network endpoint \"\(bad.host):\(bad.port)\" needs a host and a non-zero port"
        }
        return nil
    }

    public var description: String { "\(displayName) [\(id)]" }
}

// MARK: Wire form (IPC/README.md §11.1)

extension MediaOutputDevice.AuthorizationMethod: Codable {
    private enum Keys: String, CodingKey { case type, length }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        switch self {
        case .numericCode(let length):
            try container.encode("numericCode", forKey: .type)
            try container.encode(length.rawValue, forKey: .length)
        case .password: try container.encode("password", forKey: .type)
        case .none: try container.encode("none", forKey: .type)
        }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        switch try container.decode(String.self, forKey: .type) {
        case "numericCode":
            let length = try container.decode(Int.self, forKey: .length)
            guard let known = CodeLength(rawValue: length) else {
                throw WireDecodingError(path: container.codingPath + [Keys.length], "a numeric code is 4 or 6 digits long, not \(length)")
            }
            self = .numericCode(length: known)
        case "password": self = .password
        case "none": self = .none
        case let other: throw WireDecodingError(path: container.codingPath + [Keys.type], "\"\(other)\" is not numericCode, password or none")
        }
    }
}

extension MediaOutputDevice: Codable {
    private enum Keys: String, CodingKey { case id, displayName, capabilities, deviceType, volumeControl, canMute, requiredNetworkEndpoints }
    private enum EndpointKeys: String, CodingKey { case host, port }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(id, forKey: .id)
        try container.encode(displayName, forKey: .displayName)
        try container.encode(capabilities.names, forKey: .capabilities)
        try container.encode(deviceType.rawValue, forKey: .deviceType)
        try container.encode(volumeControl.rawValue, forKey: .volumeControl)
        try container.encode(canMute, forKey: .canMute)
        guard !requiredNetworkEndpoints.isEmpty else { return }
        var endpoints = container.nestedUnkeyedContainer(forKey: .requiredNetworkEndpoints)
        for endpoint in requiredNetworkEndpoints {
            var member = endpoints.nestedContainer(keyedBy: EndpointKeys.self)
            try member.encode(endpoint.host, forKey: .host)
            try member.encode(endpoint.port, forKey: .port)
        }
    }

    /// Reads a device from the wire; the error names the member that is wrong and why.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        func bad(_ key: Keys?, _ problem: String) -> WireDecodingError {
            WireDecodingError(path: container.codingPath + (key.map { [$0] } ?? []), problem)
        }
        let id = try container.decode(String.self, forKey: .id)
        let name = try container.decode(String.self, forKey: .displayName)
        guard let capabilities = Capabilities(names: try container.decode([String].self, forKey: .capabilities)) else {
            throw bad(.capabilities, "list urlPlayback, realtimeAudioStreaming or realtimeVideoStreaming")
        }
        let typeName = try container.decodeIfPresent(String.self, forKey: .deviceType) ?? "unknown"
        guard let type = DeviceType(rawValue: typeName) else {
            throw bad(.deviceType, "\"\(typeName)\" is not one of \(DeviceType.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        let controlName = try container.decodeIfPresent(String.self, forKey: .volumeControl) ?? "none"
        guard let volume = VolumeControl(rawValue: controlName) else { throw bad(.volumeControl, "must be absolute, relative or none") }
        var endpoints: [NetworkEndpoint] = []
        if container.contains(.requiredNetworkEndpoints) {
            var list = try container.nestedUnkeyedContainer(forKey: .requiredNetworkEndpoints)
            while !list.isAtEnd {
                let member = try list.nestedContainer(keyedBy: EndpointKeys.self)
                let port = try member.decode(Int.self, forKey: .port)
                guard (1...65535).contains(port) else { throw WireDecodingError(path: member.codingPath + [EndpointKeys.port], "must be from 1 to 65535") }
                endpoints.append(NetworkEndpoint(host: try member.decode(String.self, forKey: .host), port: UInt16(port)))
            }
        }
        if let problem = Self.problem(id: id, displayName: name, capabilities: capabilities, endpoints: endpoints) { throw bad(nil, problem) }
        self.init(id: id, displayName: name, capabilities: capabilities, deviceType: type, volumeControl: volume,
                  canMute: try container.decodeIfPresent(Bool.self, forKey: .canMute) ?? false, requiredNetworkEndpoints: endpoints)!
    }
}
