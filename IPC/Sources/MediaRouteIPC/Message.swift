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
        try JSONReader.withContiguousBytes(body) { buffer throws in try decode(buffer) }
    }

    /// The same, for bytes already in memory.
    public static func decode(_ body: UnsafeBufferPointer<UInt8>) throws -> Message {
        // A message object is read straight into its fields; anything else is read whole, to say what it is.
        if let message = try MessageEnvelope.message(parsing: body) { return message }
        return try decode(json: JSONReader.parse(body))
    }

    public static func decode(json: JSONValue) throws(MessageShapeError) -> Message {
        guard case .object(let object) = json else {
            throw MessageShapeError(reason: "a message must be a JSON object, got \(json.kindName)", id: nil)
        }
        return try MessageEnvelope(object).message()
    }

    /// The canonical encoding of the message body (no frame header).
    public func encode() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(128)
        encode(into: &out)
        return out
    }

    /// Appends the canonical encoding: `jsonrpc`, `id`, `method`, `params`/`result`/`error`, `fds`.
    public func encode(into out: inout [UInt8]) { encode(to: &out) }

    func encode(to out: inout some JSONOutput) {
        JSONWriter.emitLiteral(#"{"jsonrpc":"2.0""#, to: &out)
        func writeID(_ id: RequestID?) {
            JSONWriter.emitLiteral(#","id":"#, to: &out)
            switch id {
            case .number(let n)?: JSONWriter.emitInteger(n, to: &out)
            case .string(let s)?: JSONWriter.emitString(s, to: &out)
            case nil: JSONWriter.emitLiteral("null", to: &out)
            }
        }
        func writeFDs(_ n: Int) {
            guard n > 0 else { return }
            JSONWriter.emitLiteral(#","fds":"#, to: &out)
            JSONWriter.emitInteger(Int64(n), to: &out)
        }
        func writeCall(_ method: String, _ params: JSONObject?) {
            JSONWriter.emitLiteral(#","method":"#, to: &out)
            JSONWriter.emitString(method, to: &out)
            if let params {
                JSONWriter.emitLiteral(#","params":"#, to: &out)
                JSONWriter.emitObject(params, to: &out)
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
            JSONWriter.emitLiteral(#","result":"#, to: &out)
            JSONWriter.emit(result, to: &out)
            writeFDs(n)
        case .errorResponse(let id, let error):
            writeID(id)
            JSONWriter.emitLiteral(#","error":"#, to: &out)
            JSONWriter.emit(error.json, to: &out)
        }
        out.write(UInt8(ascii: "}"))
    }
}
