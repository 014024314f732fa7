/// A JSON-RPC error object: a stable numeric code for programs and a sentence for people.
///
/// Every failure that crosses the wire, or that a caller of `Connection.request` sees, is one of
/// these, so a driver written in another language reports errors the same way ours do.
public struct RPCError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        public init(_ rawValue: Int) { self.rawValue = rawValue }
        public var description: String { String(rawValue) }

        // JSON-RPC 2.0's own codes.
        public static let parseError = Code(-32700)
        public static let invalidRequest = Code(-32600)
        public static let methodNotFound = Code(-32601)
        public static let invalidParams = Code(-32602)
        public static let internalError = Code(-32603)

        // MediaRoute IPC codes, in the range JSON-RPC leaves to implementations.
        public static let versionMismatch = Code(-32000)
        public static let roleRejected = Code(-32001)
        public static let handshakeRequired = Code(-32002)
        public static let timedOut = Code(-32003)
        public static let connectionClosed = Code(-32004)
        public static let messageTooLarge = Code(-32005)
        public static let duplicateRequestID = Code(-32006)
        public static let descriptorMismatch = Code(-32007)
        public static let overloaded = Code(-32008)
        public static let unknownResponseID = Code(-32009)
        public static let frameError = Code(-32010)
        /// A driver's `hello` names another protocol than its manifest: a configuration error, not a crash.
        public static let identityMismatch = Code(-32011)
        /// The requester gave up on the request (the same value LSP uses).
        public static let requestCancelled = Code(-32800)
    }

    public var code: Code
    public var message: String
    /// Structured detail for programs; never needed to understand `message`.
    public var data: JSONValue?

    public init(_ code: Code, _ message: String, data: JSONValue? = nil) {
        self.code = code
        self.message = message
        self.data = data
    }

    public var description: String { "\(message) (code \(code.rawValue))" }

    public static func invalidParams(_ message: String) -> RPCError { RPCError(.invalidParams, message) }
    public static func methodNotFound(_ method: String) -> RPCError {
        RPCError(.methodNotFound, "method \"\(method)\" is not known to this peer; check both sides speak the same protocol version")
    }

    var json: JSONValue {
        var object: JSONObject = ["code": .integer(Int64(code.rawValue)), "message": .string(message)]
        if let data { object["data"] = data }
        return .object(object)
    }

    init?(json: JSONValue) {
        guard case .object(let object) = json,
              let code = object["code"]?.integerValue, let message = object["message"]?.stringValue,
              let intCode = Int(exactly: code)
        else { return nil }
        self.init(Code(intCode), message, data: object["data"])
    }
}
