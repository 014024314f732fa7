import MediaRouteIPC

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
        case tv, speaker, headphones, bluetoothSpeaker, receiver, setTopBox, computer, unknown
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
        func printable(_ s: String) -> Bool { !s.unicodeScalars.contains { $0.properties.generalCategory == .control } }
        if id.isEmpty || id.utf8.count > 256 || !printable(id) { return "the device id must be 1 to 256 bytes without control characters" }
        if displayName.allSatisfy(\.isWhitespace) || displayName.count > 128 || !printable(displayName) {
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

// MARK: Wire form (IPC/README.md, "Driver methods")

extension MediaOutputDevice.AuthorizationMethod {
    public var json: JSONValue {
        switch self {
        case .numericCode(let length): ["type": "numericCode", "length": .integer(Int64(length.rawValue))]
        case .password: ["type": "password"]
        case .none: ["type": "none"]
        }
    }

    public init?(json: JSONValue) {
        switch json.objectValue?["type"]?.stringValue {
        case "numericCode"?:
            guard let n = json.objectValue?["length"]?.integerValue, let length = CodeLength(rawValue: Int(n)) else { return nil }
            self = .numericCode(length: length)
        case "password"?: self = .password
        case "none"?: self = .none
        default: return nil
        }
    }
}

extension MediaOutputDevice {
    public var json: JSONValue {
        var object: JSONObject = [
            "id": .string(id), "displayName": .string(displayName),
            "capabilities": .array(capabilities.names.map { .string($0) }),
            "deviceType": .string(deviceType.rawValue), "volumeControl": .string(volumeControl.rawValue), "canMute": .bool(canMute),
        ]
        if !requiredNetworkEndpoints.isEmpty {
            object["requiredNetworkEndpoints"] = .array(requiredNetworkEndpoints.map { ["host": .string($0.host), "port": .integer(Int64($0.port))] })
        }
        return .object(object)
    }

    /// Reads a device from the wire; the error sentence names the member that is wrong.
    public init(json: JSONValue) throws(MediaDeviceError) {
        func bad(_ what: String) -> MediaDeviceError { MediaDeviceError(.invalidDevice, "invalid device: \(what)") }
        guard let object = json.objectValue else { throw bad("expected an object, got \(json.kindName)") }
        guard let id = object["id"]?.stringValue else { throw bad("\"id\" must be a string") }
        guard let name = object["displayName"]?.stringValue else { throw bad("\"displayName\" must be a string") }
        guard let capabilityNames = object["capabilities"]?.arrayValue?.compactMap(\.stringValue),
              let capabilities = Capabilities(names: capabilityNames) else {
            throw bad("\"capabilities\" must list urlPlayback, realtimeAudioStreaming or realtimeVideoStreaming")
        }
        let type = DeviceType(rawValue: object["deviceType"]?.stringValue ?? "unknown")
        guard let type else { throw bad("unknown \"deviceType\"; expected one of \(DeviceType.allCases.map(\.rawValue).joined(separator: ", "))") }
        guard let volume = VolumeControl(rawValue: object["volumeControl"]?.stringValue ?? "none") else {
            throw bad("\"volumeControl\" must be absolute, relative or none")
        }
        var endpoints: [NetworkEndpoint] = []
        for value in object["requiredNetworkEndpoints"]?.arrayValue ?? [] {
            guard let host = value.objectValue?["host"]?.stringValue, let port = value.objectValue?["port"]?.integerValue, (1...65535).contains(port) else {
                throw bad("each of \"requiredNetworkEndpoints\" needs a \"host\" and a \"port\" from 1 to 65535")
            }
            endpoints.append(NetworkEndpoint(host: host, port: UInt16(port)))
        }
        if let problem = Self.problem(id: id, displayName: name, capabilities: capabilities, endpoints: endpoints) { throw bad(problem) }
        self.init(id: id, displayName: name, capabilities: capabilities, deviceType: type, volumeControl: volume,
                  canMute: object["canMute"]?.boolValue ?? false, requiredNetworkEndpoints: endpoints)!
    }
}
