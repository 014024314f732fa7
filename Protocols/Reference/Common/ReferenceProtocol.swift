import MediaRouteIPC

/// The constants of the reference protocol (PROTOCOL.md).
public enum ReferenceProtocol {
    public static let version = 1
    public static let protocolID = "org.mediaroute.reference"
    public static let serviceType = "_mediaroute._tcp"
    /// What receivers announce as their largest frame.
    public static let maximumFrameLength = 1 << 20
    /// The largest `app.send` payload, before base64.
    public static let maximumApplicationMessage = 65_536
    /// How long a receiver keeps the session of a controller that went away.
    public static let sessionGraceSeconds = 60

    /// `level` moved by `steps` of `volume.change` (5% each, PROTOCOL.md), kept within 0...1.
    public static func volume(_ level: Double, changedBy steps: Int) -> Double {
        min(1, max(0, level + Double(steps) * 0.05))
    }

    /// A manifest for the reference driver at `executable` (the demo's, the tests' and the
    /// benchmarks'; the installed one is `org.mediaroute.reference.json`).
    public static func driverManifest(executable: String, environment: [String: String] = [:], restart: JSONValue? = nil) -> JSONValue {
        var manifest: JSONObject = [
            "protocol": .string(protocolID),
            "exportedType": ["identifier": .string(protocolID), "conformsTo": ["public.media-sharing-protocol"], "description": "MediaRoute"],
            "executable": .string(executable),
        ]
        if !environment.isEmpty {
            manifest["environment"] = .object(JSONObject(environment.sorted { $0.key < $1.key }.map { (key: $0.key, value: .string($0.value)) }))
        }
        if let restart { manifest["restart"] = restart }
        return .object(manifest)
    }

    /// RTP payload types of the real-time streams (PROTOCOL.md §4.1).
    public static let opusPayloadType: UInt8 = 111
    public static let h264PayloadType: UInt8 = 96
}

/// A reference-protocol error (PROTOCOL.md §6): a code and a sentence, carried as a JSON-RPC error.
public struct ReferenceProtocolError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: Int, Sendable, Hashable {
        case notAuthorized = 2001
        case wrongCode = 2002
        case rateLimited = 2003
        case noPairingInProgress = 2004
        case badRequest = 2010
        case mediaFailed = 2011
        case noSuchApplication = 2012
        case noSuchSession = 2013
        case unsupported = 2014
    }

    public let code: Code
    public let message: String
    public let data: JSONValue?

    public init(_ code: Code, _ message: String, data: JSONValue? = nil) {
        self.code = code
        self.message = message
        self.data = data
    }

    public var description: String { "\(message) (code \(code.rawValue))" }
    public var rpcError: RPCError { RPCError(RPCError.Code(code.rawValue), message, data: data) }

    /// A receiver's error as the controller sees it; nil for errors of the IPC layer.
    public init?(_ error: RPCError) {
        guard let code = Code(rawValue: error.code.rawValue) else { return nil }
        self.init(code, error.message, data: error.data)
    }
}

/// A session's state as a receiver reports it (PROTOCOL.md §4).
public struct ReceiverPlaybackState: Sendable, Hashable {
    public enum Phase: String, Sendable, Hashable { case loading, playing, paused, ended, failed }

    public var phase: Phase
    public var position: Double
    public var duration: Double?
    public var speed: Double
    public var title: String?

    public init(phase: Phase, position: Double, duration: Double?, speed: Double, title: String?) {
        self.phase = phase
        self.position = position
        self.duration = duration
        self.speed = speed
        self.title = title
    }

    public var isPlaying: Bool { phase == .playing || phase == .loading }
}
