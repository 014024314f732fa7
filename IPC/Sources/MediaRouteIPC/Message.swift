/// A JSON-RPC request id. Our peers use integers; strings are accepted for other implementations.
public enum RequestID: Sendable, Hashable, CustomStringConvertible {
    case number(Int64)
    case string(String)

    public var description: String {
        switch self {
        case .number(let n): String(n)
        case .string(let s): "\"\(s)\""
        }
    }

    var json: JSONValue {
        switch self {
        case .number(let n): .integer(n)
        case .string(let s): .string(s)
        }
    }
}

/// One JSON-RPC 2.0 message. `descriptorCount` is MediaRoute's extension: how many file
/// descriptors travelled with this frame (the `fds` member on the wire).
public enum Message: Sendable, Hashable {
    case request(id: RequestID, method: String, params: JSONObject?, descriptorCount: Int)
    case notification(method: String, params: JSONObject?, descriptorCount: Int)
    case response(id: RequestID, result: JSONValue, descriptorCount: Int)
    /// `id` is nil only when the failing message's id could not be read (JSON-RPC's `"id": null`).
    case errorResponse(id: RequestID?, error: RPCError)

    /// The most descriptors one frame may carry.
    public static let maximumDescriptorsPerFrame = 16

    public var descriptorCount: Int {
        switch self {
        case .request(_, _, _, let n), .notification(_, _, let n), .response(_, _, let n): n
        case .errorResponse: 0
        }
    }
}

/// Why a well-formed JSON text is not a JSON-RPC message we accept. Carries the id when it could
/// be read, so the error reply can name the request it answers.
public struct MessageShapeError: Error, Sendable, Equatable, CustomStringConvertible {
    public let reason: String
    public let id: RequestID?
    public var description: String { reason }
}

extension Message {
    /// Decodes a frame body: UTF-8, then JSON, then the JSON-RPC shape.
    public static func decode(_ body: some Collection<UInt8>) throws -> Message {
        try decode(json: try JSONReader.parse(body))
    }

    public static func decode(json: JSONValue) throws(MessageShapeError) -> Message {
        guard case .object(let object) = json else {
            throw MessageShapeError(reason: "a message must be a JSON object, got \(json.kindName)", id: nil)
        }
        // The id is read first so that every later complaint can be addressed to it.
        var id: RequestID? = nil
        var idError: String? = nil
        switch object["id"] {
        case nil, .null?: break
        case .integer(let n)?: id = .number(n)
        case .string(let s)?: id = .string(s)
        case let other?: idError = "\"id\" must be an integer or a string, got \(other.kindName)"
        }
        func fail(_ reason: String) -> MessageShapeError { MessageShapeError(reason: reason, id: id) }

        guard let version = object["jsonrpc"] else { throw fail("missing \"jsonrpc\": \"2.0\"") }
        guard version == .string("2.0") else { throw fail("\"jsonrpc\" must be \"2.0\"") }
        if let idError { throw fail(idError) }

        var descriptorCount = 0
        if let fds = object["fds"] {
            guard let n = fds.integerValue, n >= 0, n <= Int64(maximumDescriptorsPerFrame) else {
                throw fail("\"fds\" must be an integer from 0 to \(maximumDescriptorsPerFrame)")
            }
            descriptorCount = Int(n)
        }

        if let methodValue = object["method"] {
            guard case .string(let method) = methodValue, !method.isEmpty else {
                throw fail("\"method\" must be a non-empty string")
            }
            var params: JSONObject? = nil
            switch object["params"] {
            case nil: break
            case .object(let p)?: params = p
            case let other?: throw fail("\"params\" of \"\(method)\" must be an object, got \(other.kindName)")
            }
            if object["result"] != nil || object["error"] != nil {
                throw fail("a message cannot be both a call (\"method\") and a response (\"result\"/\"error\")")
            }
            if object["id"] == .null { throw fail("a request's \"id\" cannot be null; omit it for a notification") }
            if let id { return .request(id: id, method: method, params: params, descriptorCount: descriptorCount) }
            return .notification(method: method, params: params, descriptorCount: descriptorCount)
        }

        switch (object["result"], object["error"]) {
        case (let result?, nil):
            guard let id else { throw fail("a response needs the \"id\" of the request it answers") }
            return .response(id: id, result: result, descriptorCount: descriptorCount)
        case (nil, let errorValue?):
            guard object["id"] != nil else { throw fail("an error response needs an \"id\" (null if unknown)") }
            guard let error = RPCError(json: errorValue) else {
                throw fail("\"error\" must be an object with an integer \"code\" and a string \"message\"")
            }
            if descriptorCount != 0 { throw fail("an error response cannot carry file descriptors") }
            return .errorResponse(id: id, error: error)
        case (.some, .some):
            throw fail("a response has either \"result\" or \"error\", not both")
        case (nil, nil):
            throw fail("a message needs \"method\" (a call) or \"result\"/\"error\" (a response)")
        }
    }

    /// The canonical encoding of the message body (no frame header).
    public func encode() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(128)
        encode(into: &out)
        return out
    }

    /// Appends the canonical encoding: `jsonrpc`, `id`, `method`, `params`/`result`/`error`, `fds`.
    public func encode(into out: inout [UInt8]) {
        out.append(contentsOf: #"{"jsonrpc":"2.0""#.utf8)
        func writeID(_ id: RequestID?) {
            out.append(contentsOf: #","id":"#.utf8)
            if let id { JSONWriter.write(id.json, into: &out) } else { out.append(contentsOf: "null".utf8) }
        }
        func writeFDs(_ n: Int) {
            guard n > 0 else { return }
            out.append(contentsOf: #","fds":"#.utf8)
            JSONWriter.writeInteger(Int64(n), into: &out)
        }
        func writeCall(_ method: String, _ params: JSONObject?) {
            out.append(contentsOf: #","method":"#.utf8)
            JSONWriter.writeString(method, into: &out)
            if let params {
                out.append(contentsOf: #","params":"#.utf8)
                JSONWriter.writeObject(params, into: &out)
            }
        }
        switch self {
        case .request(let id, let method, let params, let n):
            writeID(id)
            writeCall(method, params)
            writeFDs(n)
        case .notification(let method, let params, let n):
            writeCall(method, params)
            writeFDs(n)
        case .response(let id, let result, let n):
            writeID(id)
            out.append(contentsOf: #","result":"#.utf8)
            JSONWriter.write(result, into: &out)
            writeFDs(n)
        case .errorResponse(let id, let error):
            writeID(id)
            out.append(contentsOf: #","error":"#.utf8)
            JSONWriter.write(error.json, into: &out)
        }
        out.append(UInt8(ascii: "}"))
    }
}
