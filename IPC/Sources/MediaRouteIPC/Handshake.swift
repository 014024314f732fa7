/// The `hello` exchange that opens every connection (IPC/README.md §4): who waits for it, its
/// deadline, and what each message that arrives before it completes leads to.
///
/// Owned by `Connection`, on its loop. The rules (version, roles, what may come first) are decided
/// here as steps the connection carries out, so they read in one place apart from the I/O.
struct Handshake {
    let side: HandshakeSide
    /// Ours, with the frame limit this side announces.
    let localHello: Hello
    /// `Connection.open`'s caller, until the handshake completes or fails.
    var waiter: UnsafeContinuation<Hello, Error>?
    /// Ends the connection if the handshake does not complete in time.
    var timer: EventLoop.TimerHandle?
    /// The initiator's `hello` request.
    var helloRequestID: RequestID?

    init(side: HandshakeSide, localHello: Hello) {
        self.side = side
        self.localHello = localHello
    }

    /// What a message received during the handshake leads to.
    enum Step {
        /// The acceptor answers `hello` (request `id`) with its own, then the connection is open.
        case answer(id: RequestID, peer: Hello)
        /// The initiator's `hello` was answered: the connection is open.
        case finish(peer: Hello)
        /// Tell the peer `error` in answer to `id`, then close with `reason`.
        case refuse(id: RequestID?, error: RPCError, reason: RPCError)
        case close(RPCError)
    }

    func step(for message: Message, peer label: String, acceptHello: (@Sendable (Hello) throws(RPCError) -> Void)?) -> Step {
        switch (side, message) {
        case (.acceptor, .request(let id, "hello", let params, _)):
            do {
                let hello = try checkedPeerHello(Hello(json: params))
                try acceptHello?(hello)
                return .answer(id: id, peer: hello)
            } catch {
                return .refuse(id: id, error: error, reason: Self.failure(error, label))
            }
        case (.initiator, .response(let id, let result, _)) where id == helloRequestID:
            do {
                return .finish(peer: try checkedPeerHello(Hello(json: result.objectValue)))
            } catch {
                return .close(Self.failure(error, label))
            }
        case (.initiator, .errorResponse(let id, let error)) where id == helloRequestID || id == nil:
            return .close(RPCError(error.code, "\(label) refused the handshake: \(error.message)"))
        case (_, .request(let id, let method, _, _)):
            return .refuse(id: id, error: RPCError(.handshakeRequired, "the first message must be hello, not \"\(method)\""),
                           reason: RPCError(.handshakeRequired, "\(label) sent \"\(method)\" before completing the hello handshake"))
        default:
            return .close(RPCError(.handshakeRequired, "\(label) sent something other than hello before completing the handshake"))
        }
    }

    /// Why the handshake failed, for the connection's close reason.
    static func failure(_ error: RPCError, _ label: String) -> RPCError {
        RPCError(error.code, "handshake with \(label) failed: \(error.message)")
    }

    private func checkedPeerHello(_ hello: Hello) throws(RPCError) -> Hello {
        guard hello.version == Hello.currentVersion else {
            throw RPCError(.versionMismatch, "the peer speaks MediaRoute IPC version \(hello.version) and this side speaks version \(Hello.currentVersion); install matching versions of both programs")
        }
        guard side.acceptedRoles.contains(hello.role) else {
            throw RPCError(.roleRejected, "a peer with role \"\(hello.role.rawValue)\" is not accepted here (accepted: \(side.acceptedRoles.map(\.rawValue).sorted().joined(separator: ", ")))")
        }
        return hello
    }

    /// The frame limit both directions use from now on: the smaller of the two announced.
    func agreedFrameLength(with peer: Hello) -> Int {
        min(localHello.maximumFrameLength, peer.maximumFrameLength)
    }
}
