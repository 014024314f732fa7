import MediaRouteIPC

/// A request on the MediaRoute wire: the type is its params, `Result` its answer, `method` its
/// name. Every request of IPC/README.md §11 is one such type, defined once and used by both sides.
package protocol WireRequest: Codable, Sendable {
    associatedtype Result: Codable & Sendable
    static var method: String { get }
}

/// A notification on the MediaRoute wire: the type is its params.
package protocol WireNotification: Codable, Sendable {
    static var method: String { get }
}

/// The result of a request that answers nothing (`null`). It reads any answer, so a peer that
/// answers `{}` where the spec says `null` is not an error.
package struct NoResult: Codable, Sendable, Equatable {
    package init() {}
    package init(from decoder: any Decoder) throws {}
    package func encode(to encoder: any Encoder) throws {
        var single = encoder.singleValueContainer()
        try single.encodeNil()
    }
}

extension WireRequest {
    /// The params as they travel.
    package var params: JSONObject { WireEncoder.encode(self).objectValue ?? [:] }

    /// Reads this request's params; the error names the method and the member.
    package static func decode(_ params: JSONObject) throws(RPCError) -> Self {
        do { return try WireDecoder.decode(Self.self, from: .object(params)) } catch {
            throw RPCError(.invalidParams, "\(method): \(error)")
        }
    }

    /// Reads an answer to this request; an answer that is not a `Result` is the peer's mistake, named.
    package static func decodeResult(_ value: JSONValue) throws(RPCError) -> Result {
        do { return try WireDecoder.decode(Result.self, from: value) } catch {
            throw RPCError(.internalError, "the answer to \(method) is not what the protocol says: \(error)")
        }
    }
}

extension WireNotification {
    package var params: JSONObject { WireEncoder.encode(self).objectValue ?? [:] }

    package static func decode(_ params: JSONObject) throws(RPCError) -> Self {
        do { return try WireDecoder.decode(Self.self, from: .object(params)) } catch {
            throw RPCError(.invalidParams, "\(method): \(error)")
        }
    }
}

extension Connection {
    /// Sends a typed request and reads its typed answer.
    package func call<Request: WireRequest>(_ request: Request, descriptors: [Int32] = [], timeout: Duration? = nil) async throws -> Request.Result {
        try Request.decodeResult(try await self.request(Request.method, request.params, descriptors: descriptors, timeout: timeout).result)
    }

    /// The same, with the descriptors that came with the answer.
    package func callReceivingDescriptors<Request: WireRequest>(_ request: Request) async throws -> (Request.Result, ReceivedDescriptors) {
        let response = try await self.request(Request.method, request.params)
        return (try Request.decodeResult(response.result), response.descriptors)
    }

    /// Sends a typed notification from code that cannot wait (see `post(_:_:)`).
    package nonisolated func post<Notification: WireNotification>(_ notification: Notification) {
        post(Notification.method, notification.params)
    }
}

extension RPCHandlers {
    /// Answers `Request` in a task of its own; params that do not decode are refused with
    /// `invalidParams` naming the member, before `body` runs.
    package mutating func on<Request: WireRequest>(
        _ type: Request.Type, _ body: @escaping @Sendable (Request, IncomingRequest) async throws -> Request.Result
    ) {
        onRequest(Request.method) { incoming in
            let request = try Request.decode(incoming.params)
            return RPCReply(WireEncoder.encode(try await body(request, incoming)))
        }
    }

    /// Answers `Request` on the main actor (see `RPCHandlers.MainActorRequestHandler`); params
    /// that do not decode are refused as `on` refuses them.
    package mutating func onMainActor<Request: WireRequest>(
        _ type: Request.Type, _ body: @escaping @MainActor @Sendable (Request, IncomingRequest) throws -> Request.Result
    ) {
        onMainActorRequest(Request.method) { incoming in
            let request = try Request.decode(incoming.params)
            return RPCReply(WireEncoder.encode(try body(request, incoming)))
        }
    }

    /// The same as `on`, for an answer that carries descriptors (the reply owns and closes them).
    package mutating func on<Request: WireRequest>(
        _ type: Request.Type, replying body: @escaping @Sendable (Request, IncomingRequest) async throws -> (Request.Result, [Int32])
    ) {
        onRequest(Request.method) { incoming in
            let request = try Request.decode(incoming.params)
            let (result, descriptors) = try await body(request, incoming)
            return RPCReply(WireEncoder.encode(result), descriptors: descriptors)
        }
    }

    /// Handles `Notification` on the loop thread, in arrival order. One that does not decode goes
    /// to `invalid` with the sentence naming the member.
    package mutating func on<Notification: WireNotification>(
        _ type: Notification.Type, invalid: @escaping @Sendable (RPCError) -> Void, _ body: @escaping @Sendable (Notification) -> Void
    ) {
        onNotification(Notification.method) { incoming in
            do throws(RPCError) { body(try Notification.decode(incoming.params)) } catch { invalid(error) }
        }
    }
}
