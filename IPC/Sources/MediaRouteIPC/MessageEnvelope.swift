/// The members of a JSON-RPC message object that MediaRoute reads, before their shape is checked.
///
/// A frame is read straight into these fields, so the hot path builds no object for the envelope
/// and looks nothing up; members this version does not know are read and dropped.
struct MessageEnvelope {
    var jsonrpc: JSONValue?
    var id: JSONValue?
    var method: JSONValue?
    var params: JSONValue?
    var result: JSONValue?
    var error: JSONValue?
    var fds: JSONValue?

    init(_ object: JSONObject) {
        for member in object.members {
            if let field = Field(member.key) { set(field, member.value) }
        }
    }

    private init() {}

    /// The message a frame body holds, read straight into an envelope that is never copied; nil
    /// if the body holds a JSON value other than an object.
    static func message(parsing buffer: UnsafeBufferPointer<UInt8>) throws -> Message? {
        var envelope = MessageEnvelope()
        guard try envelope.read(buffer) else { return nil }
        return try envelope.message()
    }

    /// Reads a frame body that holds a JSON object; false if it holds another kind of value.
    private mutating func read(_ buffer: UnsafeBufferPointer<UInt8>) throws(JSONSyntaxError) -> Bool {
        var reader = try JSONReader(validating: buffer)
        guard reader.next == UInt8(ascii: "{") else { return false }
        var unknownKeys: Set<String> = []
        // Keys are matched on their bytes: the envelope's own keys never become strings.
        try reader.readMemberKeys(depth: 1) { reader, key, keyOffset throws(JSONSyntaxError) in
            let field = switch key {
            case .plain(let bytes): Field(bytes)
            case .unescaped(let string): Field(string)
            }
            let isNew = if let field { !has(field) } else { unknownKeys.insert(key.string).inserted }
            guard isNew else { throw JSONSyntaxError(kind: .duplicateKey(key.string), offset: keyOffset) }
            if field == .jsonrpc, reader.skip(#""2.0""#) {
                jsonrpc = Self.version  // what every message says, taken without reading a string
                return
            }
            let value = try reader.readValue(depth: 1)
            if let field { set(field, value) }
        }
        try reader.expectEnd()
        return true
    }

    private static let version = JSONValue.string("2.0")

    private enum Field {
        case jsonrpc, id, method, params, result, error, fds

        /// Tells the length first, so a key costs at most three string comparisons.
        init?(_ key: String) {
            switch key.utf8.count {
            case 2 where key == "id": self = .id
            case 3 where key == "fds": self = .fds
            case 5 where key == "error": self = .error
            case 6 where key == "method": self = .method
            case 6 where key == "params": self = .params
            case 6 where key == "result": self = .result
            case 7 where key == "jsonrpc": self = .jsonrpc
            default: return nil
            }
        }

        /// The same, from a key's bytes as they stand in the frame.
        init?(_ key: UnsafeBufferPointer<UInt8>) {
            func `is`(_ name: StaticString) -> Bool {
                let start = name.utf8Start
                for i in 0..<key.count where key[i] != start[i] { return false }
                return true
            }
            switch key.count {
            case 2 where `is`("id"): self = .id
            case 3 where `is`("fds"): self = .fds
            case 5 where `is`("error"): self = .error
            case 6 where `is`("method"): self = .method
            case 6 where `is`("params"): self = .params
            case 6 where `is`("result"): self = .result
            case 7 where `is`("jsonrpc"): self = .jsonrpc
            default: return nil
            }
        }
    }

    private func has(_ field: Field) -> Bool {
        switch field {
        case .jsonrpc: jsonrpc != nil
        case .id: id != nil
        case .method: method != nil
        case .params: params != nil
        case .result: result != nil
        case .error: error != nil
        case .fds: fds != nil
        }
    }

    private mutating func set(_ field: Field, _ value: consuming JSONValue) {
        switch field {
        case .jsonrpc: jsonrpc = value
        case .id: id = value
        case .method: method = value
        case .params: params = value
        case .result: result = value
        case .error: error = value
        case .fds: fds = value
        }
    }

    /// The message these members make, or why they make none.
    consuming func message() throws(MessageShapeError) -> Message {
        // The id is read first so that every later complaint can be addressed to it.
        var requestID: RequestID? = nil
        var idError: String? = nil
        switch id {
        case nil, .null?: break
        case .integer(let n)?: requestID = .number(n)
        case .string(let s)?: requestID = .string(s)
        case let other?: idError = "\"id\" must be an integer or a string, got \(other.kindName)"
        }
        func fail(_ reason: String) -> MessageShapeError { MessageShapeError(reason: reason, id: requestID) }

        guard let jsonrpc else { throw fail("missing \"jsonrpc\": \"2.0\"") }
        guard jsonrpc == .string("2.0") else { throw fail("\"jsonrpc\" must be \"2.0\"") }
        if let idError { throw fail(idError) }

        var descriptorCount = 0
        if let fds {
            guard let n = fds.integerValue, n >= 0, n <= Int64(Message.maximumDescriptorsPerFrame) else {
                throw fail("\"fds\" must be an integer from 0 to \(Message.maximumDescriptorsPerFrame)")
            }
            descriptorCount = Int(n)
        }

        if let method {
            guard case .string(let method) = method, !method.isEmpty else {
                throw fail("\"method\" must be a non-empty string")
            }
            var object: JSONObject? = nil
            switch params {
            case nil: break
            case .object(let p)?: object = p
            case let other?: throw fail("\"params\" of \"\(method)\" must be an object, got \(other.kindName)")
            }
            if result != nil || error != nil {
                throw fail("a message cannot be both a call (\"method\") and a response (\"result\"/\"error\")")
            }
            if id == .null { throw fail("a request's \"id\" cannot be null; omit it for a notification") }
            if let requestID { return .request(id: requestID, method: method, params: object, descriptorCount: descriptorCount) }
            return .notification(method: method, params: object, descriptorCount: descriptorCount)
        }

        switch (result, error) {
        case (let result?, nil):
            guard let requestID else { throw fail("a response needs the \"id\" of the request it answers") }
            return .response(id: requestID, result: result, descriptorCount: descriptorCount)
        case (nil, let errorValue?):
            guard id != nil else { throw fail("an error response needs an \"id\" (null if unknown)") }
            guard let error = RPCError(json: errorValue) else {
                throw fail("\"error\" must be an object with an integer \"code\" and a string \"message\"")
            }
            if descriptorCount != 0 { throw fail("an error response cannot carry file descriptors") }
            return .errorResponse(id: requestID, error: error)
        case (.some, .some):
            throw fail("a response has either \"result\" or \"error\", not both")
        case (nil, nil):
            throw fail("a message needs \"method\" (a call) or \"result\"/\"error\" (a response)")
        }
    }
}
