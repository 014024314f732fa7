/// The first message on every connection: who is speaking, which protocol version, how large a
/// frame it accepts, and which optional features it has.
public struct Hello: Sendable, Hashable {
    /// Bumped only for incompatible changes; additions are announced as features instead.
    public static let currentVersion = 1

    public enum Role: String, Sendable, Hashable, CaseIterable {
        case driver, app, control, supervisor
        /// A NowPlaying extension (§11.6): like a driver, on descriptor 3 of a process the supervisor started.
        case `extension`
        /// The reference protocol over TCP (Protocols/Reference/PROTOCOL.md): a driver controlling a
        /// receiver, and the receiver.
        case controller, receiver
    }

    public var version: Int
    public var role: Role
    /// Who the peer is: always a `name`; role-specific members (a driver's `protocol`, an app's
    /// supported protocols) are specified with the methods that use them.
    public var identity: JSONObject
    public var maximumFrameLength: Int
    public var features: [String]

    public init(role: Role, name: String, identity: JSONObject = [:], maximumFrameLength: Int = FrameDecoder.defaultMaximumFrameLength,
                features: [String] = [], version: Int = Hello.currentVersion) {
        self.version = version
        self.role = role
        var identity = identity
        identity["name"] = .string(name)
        self.identity = identity
        self.maximumFrameLength = maximumFrameLength
        self.features = features
    }

    public var name: String { identity["name"]?.stringValue ?? "?" }

    /// The smallest frame limit a peer may announce: anything lower could not carry a hello.
    public static let minimumFrameLength = 4096

    var json: JSONObject {
        ["version": .integer(Int64(version)), "role": .string(role.rawValue), "identity": .object(identity),
         "maxFrameLength": .integer(Int64(maximumFrameLength)), "features": .array(features.map { .string($0) })]
    }

    init(json: JSONObject?) throws(RPCError) {
        guard let json else { throw .invalidParams("hello needs params: version, role, identity, maxFrameLength, features") }
        guard let version = json["version"]?.integerValue else { throw .invalidParams("hello: \"version\" must be an integer") }
        guard let roleName = json["role"]?.stringValue else { throw .invalidParams("hello: \"role\" must be a string") }
        guard let role = Role(rawValue: roleName) else {
            throw RPCError(.roleRejected, "hello: unknown role \"\(roleName)\"; expected one of \(Role.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard let identity = json["identity"]?.objectValue, identity["name"]?.stringValue?.isEmpty == false else {
            throw .invalidParams("hello: \"identity\" must be an object with a non-empty string \"name\"")
        }
        guard let maximum = json["maxFrameLength"]?.integerValue, maximum >= Int64(Self.minimumFrameLength), maximum <= Int64(UInt32.max) else {
            throw .invalidParams("hello: \"maxFrameLength\" must be an integer from \(Self.minimumFrameLength) to \(UInt32.max)")
        }
        // Optional (§4): absent means no optional features.
        let featureValues: [JSONValue]
        switch json["features"] {
        case nil: featureValues = []
        case .array(let values)?: featureValues = values
        case _?: throw .invalidParams("hello: \"features\" must be an array of strings")
        }
        var features: [String] = []
        for value in featureValues {
            guard let feature = value.stringValue else { throw .invalidParams("hello: \"features\" must be an array of strings") }
            features.append(feature)
        }
        self.version = Int(version)
        self.role = role
        self.identity = identity
        self.maximumFrameLength = Int(maximum)
        self.features = features
    }
}

/// A request as a handler sees it.
public struct IncomingRequest: Sendable {
    /// The connection it arrived on: where to ask the peer something back.
    public let connection: Connection
    public let id: RequestID
    public let method: String
    public let params: JSONObject
    public let descriptors: ReceivedDescriptors
}

/// A notification as a handler sees it.
public struct IncomingNotification: Sendable {
    public let connection: Connection
    public let method: String
    public let params: JSONObject
    public let descriptors: ReceivedDescriptors
}

/// A successful answer: a result and, optionally, descriptors to pass along with it. The reply
/// owns its descriptors: the connection closes them once sent (a handler returns before its
/// answer is written, so it could not keep them open itself).
public struct RPCReply: Sendable {
    public var result: JSONValue
    public var descriptors: [Int32]
    public init(_ result: JSONValue = .null, descriptors: [Int32] = []) {
        self.result = result
        self.descriptors = descriptors
    }
}

/// The answer to a request we sent.
public struct RPCResponse: Sendable {
    public let result: JSONValue
    public let descriptors: ReceivedDescriptors
}

/// How a connection answers the calls its peer makes.
public struct RPCHandlers: Sendable {
    /// Runs on the connection's loop (`nonisolated(nonsending)`): a handler that calls an actor on
    /// the same loop, as the supervisor is, never leaves the thread.
    public typealias RequestHandler = nonisolated(nonsending) @Sendable (IncomingRequest) async throws -> RPCReply
    /// Answers on the loop thread as the request is read, with no task of its own: for answers
    /// that need no waiting (a lookup, an echo). The task saved is about a tenth of a round trip
    /// between two processes on one core. Keep it short: the connection reads nothing meanwhile.
    public typealias ImmediateRequestHandler = @Sendable (IncomingRequest) throws -> RPCReply
    /// Runs on the main actor. Where the connection's loop is the main thread's and has nothing
    /// else to do first, it runs as the request is read (no task, no hop: ~40 µs of a driver's
    /// answer to the supervisor); otherwise in a task, after what the main actor had queued.
    public typealias MainActorRequestHandler = @MainActor @Sendable (IncomingRequest) throws -> RPCReply
    /// Runs on the loop thread, in arrival order; keep it short or start a task.
    public typealias NotificationHandler = @Sendable (IncomingNotification) -> Void

    enum Answering: Sendable {
        case immediately(ImmediateRequestHandler)
        case inTask(RequestHandler)
        case onMainActor(MainActorRequestHandler)
    }

    private(set) var requests: [String: Answering] = [:]
    public private(set) var notifications: [String: NotificationHandler] = [:]

    public init() {}

    public mutating func onRequest(_ method: String, _ handler: @escaping RequestHandler) { requests[method] = .inTask(handler) }
    public mutating func onImmediateRequest(_ method: String, _ handler: @escaping ImmediateRequestHandler) { requests[method] = .immediately(handler) }
    public mutating func onMainActorRequest(_ method: String, _ handler: @escaping MainActorRequestHandler) { requests[method] = .onMainActor(handler) }
    public mutating func onNotification(_ method: String, _ handler: @escaping NotificationHandler) { notifications[method] = handler }
}
