import Logging
import MediaRouteIPC
import NIOCore
import NIOHTTP1

/// One connection to the push endpoint. Reads a request (its body up to `PushRequest.maximumPayload`
/// bytes: beyond that it answers 413 at once and reads nothing more into memory), checks it, hands a
/// valid push to the delivery and answers. NIO's pipeline handler holds later requests back until
/// the answer has ended, so they are served one at a time, in order. A request must arrive whole
/// within the deadline (else 408 and the connection closes), and a kept-alive connection that
/// starts no request within it is closed.
final class PushConnectionHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private enum State {
        /// Between requests.
        case idle
        case receiving(HTTPRequestHead, [UInt8])
        /// Answered early (413 or 408); whatever else arrives is dropped until the connection closes.
        case refused
        case delivering
    }

    private let credentials: PushCredentials
    private let deadline: Duration
    private let logger: Logger
    private let deliver: PushEndpoint.Delivery
    /// Set on a connection over the endpoint's limit: answered with it as soon as it opens, then closed.
    private let refusingAll: PushRefusal?
    private var state = State.idle
    private var timer: Scheduled<Void>?

    init(credentials: PushCredentials, deadline: Duration, logger: Logger, deliver: @escaping PushEndpoint.Delivery, refusingAll: PushRefusal?) {
        self.credentials = credentials
        self.deadline = deadline
        self.logger = logger
        self.deliver = deliver
        self.refusingAll = refusingAll
    }

    func channelActive(context: ChannelHandlerContext) {
        if let refusingAll {
            state = .refused
            answer(.failure(refusingAll), apnsID: nil, version: .http1_1, keepAlive: false, context: context)
        } else {
            armDeadline(context: context)
        }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard refusingAll == nil else { return }
        switch unwrapInboundIn(data) {
        case .head(let head):
            guard case .idle = state else { return }
            if let length = head.headers.first(name: "content-length").flatMap(Int.init), length > PushRequest.maximumPayload {
                return refuseEarly(Self.tooLarge, head, context: context)
            }
            state = .receiving(head, [])
        case .body(var buffer):
            guard case .receiving(let head, var body) = state else { return }
            guard body.count + buffer.readableBytes <= PushRequest.maximumPayload else { return refuseEarly(Self.tooLarge, head, context: context) }
            state = .idle  // so that `body` is the only reference and grows in place
            body += buffer.readBytes(length: buffer.readableBytes) ?? []
            state = .receiving(head, body)
        case .end:
            guard case .receiving(let head, let body) = state else { return }
            timer?.cancel()
            state = .delivering
            handle(head, body: body, context: context)
        }
    }

    /// Parse errors reach here after NIO's error handler has answered 400.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    private static let tooLarge = PushRefusal(.payloadTooLarge, "the payload is over \(PushRequest.maximumPayload) bytes, the most a push may carry; send less in aps.attributes")

    private func handle(_ head: HTTPRequestHead, body: [UInt8], context: ChannelHandlerContext) {
        let push: PushRequest
        do {
            push = try PushRequest(method: head.method, target: head.uri, headers: head.headers, body: body, credentials: credentials)
        } catch {
            logger.info("refused a push: \(error)")
            return answer(.failure(error), apnsID: head.headers.first(name: "apns-id"), version: head.version, keepAlive: head.isKeepAlive, context: context)
        }
        let deliver = self.deliver
        let logger = self.logger
        let bound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
        Task {
            let outcome: Result<Void, PushRefusal>
            do throws(PushRefusal) {
                try await deliver(push)
                outcome = .success(())
            } catch {
                logger.info("push \(push.apnsID) (\(push.event.rawValue) for \(push.applicationIdentifier)) not delivered: \(error)")
                outcome = .failure(error)
            }
            bound.eventLoop.execute {
                bound.value.handler.answer(outcome, apnsID: push.apnsID, version: head.version, keepAlive: head.isKeepAlive, context: bound.value.context)
            }
        }
    }

    /// Answers before the request has ended, and reads no more of it.
    private func refuseEarly(_ refusal: PushRefusal, _ head: HTTPRequestHead, context: ChannelHandlerContext) {
        logger.info("refused a push: \(refusal)")
        state = .refused
        answer(.failure(refusal), apnsID: head.headers.first(name: "apns-id"), version: head.version, keepAlive: false, context: context)
    }

    /// 200 with `apns-id` and no body, or the refusal's status with `{"reason", "message"}`. Unless
    /// kept alive, the connection's write side is shut after the answer (the client sees it whole,
    /// where closing at once could reset the connection under it), and the deadline closes the rest.
    private func answer(_ outcome: Result<Void, PushRefusal>, apnsID: String?, version: HTTPVersion, keepAlive: Bool, context: ChannelHandlerContext) {
        guard context.channel.isActive else { return }
        var headers = HTTPHeaders()
        var body: ByteBuffer?
        let status: HTTPResponseStatus
        switch outcome {
        case .success:
            status = .ok
        case .failure(let refusal):
            status = HTTPResponseStatus(statusCode: refusal.status)
            let json: JSONValue = ["reason": .string(refusal.reason.rawValue), "message": .string(refusal.message)]
            body = context.channel.allocator.buffer(bytes: JSONWriter.encode(json))
            headers.add(name: "content-type", value: "application/json")
        }
        if let apnsID { headers.add(name: "apns-id", value: apnsID) }
        headers.add(name: "content-length", value: String(body?.readableBytes ?? 0))
        if !keepAlive { headers.add(name: "connection", value: "close") }
        // Ready for the next request before the answer ends: the pipeline handler passes on a
        // request it held back as soon as it does.
        if keepAlive, case .delivering = state {
            state = .idle
            armDeadline(context: context)
        }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: version, status: status, headers: headers))), promise: nil)
        if let body { context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil) }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        if !keepAlive {
            state = .refused
            armDeadline(context: context)
            context.close(mode: .output, promise: nil)
        }
    }

    /// Closes the connection when the deadline passes: with 408 in the middle of a request, at
    /// once otherwise.
    private func armDeadline(context: ChannelHandlerContext) {
        timer?.cancel()
        let bound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
        let (seconds, attoseconds) = deadline.components
        timer = context.eventLoop.scheduleTask(in: .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)) {
            let (handler, context) = bound.value
            if case .receiving(let head, _) = handler.state {
                handler.refuseEarly(PushRefusal(.requestTimeout, "the request did not arrive whole within \(handler.deadline); send it at once"),
                                    head, context: context)
            } else {
                context.close(promise: nil)
            }
        }
    }
}
