import NIOCore
import NIOHTTP1

/// One connection to a `DACPServer`: each request is checked (method, path, `Active-Remote`,
/// command, value), reported to the server's handler if valid, and answered at once on the event
/// loop: 204 with `Content-Length: 0` as iTunes does, or an error status with a sentence. Requests
/// are answered in order. Every answer carries its Content-Length (the encoder adds none).
final class DACPConnectionHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    static let prefix = "/ctrl-int/1/"

    private let session: DACPSession
    private let maximumTarget: Int
    private let budget: DACPRequestBudget
    private let report: @Sendable (Result<DACPCommand, DACPError>) -> Void
    private var head: HTTPRequestHead?
    private var bodyBytes = 0

    init(session: DACPSession, maximumTarget: Int, budget: DACPRequestBudget, report: @escaping @Sendable (Result<DACPCommand, DACPError>) -> Void) {
        self.session = session
        self.maximumTarget = maximumTarget
        self.budget = budget
        self.report = report
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let requestHead):
            head = requestHead
            bodyBytes = 0
        case .body(let buffer):
            bodyBytes += buffer.readableBytes
        case .end:
            guard let requestHead = head else { return }
            head = nil
            budget.requestEnded()
            let result = evaluate(requestHead)
            report(result)
            answer(requestHead, result, context: context)
        }
    }

    /// The command a request carries, or why it is refused. Nothing here has side effects.
    func evaluate(_ request: HTTPRequestHead) -> Result<DACPCommand, DACPError> {
        if request.uri.utf8.count > maximumTarget {
            return .failure(DACPError(.requestTooLarge, "the request target is \(request.uri.utf8.count) bytes, over the limit of \(maximumTarget)"))
        }
        if bodyBytes > 0 { return .failure(DACPError(.requestTooLarge, "a DACP request has no body; this one has \(bodyBytes) bytes")) }
        guard request.uri.hasPrefix(Self.prefix) else {
            return .failure(DACPError(.notFound, "\(request.uri) is not a DACP control path (\(Self.prefix)<command>)"))
        }
        guard request.method == .GET else { return .failure(DACPError(.methodNotAllowed, "DACP commands are GET requests, not \(request.method)")) }
        let remotes = request.headers["Active-Remote"]
        guard remotes.count == 1, remotes[0] == session.activeRemote else {
            return .failure(DACPError(.forbidden, remotes.isEmpty ? "the request has no Active-Remote header" : "Active-Remote \(remotes.joined(separator: ", ")) is not this session's"))
        }
        do throws(DACPError) {
            return .success(try DACPCommand(command: request.uri.dropFirst(Self.prefix.count)))
        } catch {
            return .failure(error)
        }
    }

    private func answer(_ request: HTTPRequestHead, _ result: Result<DACPCommand, DACPError>, context: ChannelHandlerContext) {
        var headers = HTTPHeaders()
        headers.add(name: "DAAP-Server", value: "MediaRoute/1.0")
        let status: HTTPResponseStatus
        var body: ByteBuffer?
        switch result {
        case .success:
            status = .noContent
        case .failure(let error):
            switch error.code {
            case .forbidden: status = .forbidden
            case .notFound: status = .notFound
            case .methodNotAllowed: status = .methodNotAllowed
            case .requestTooLarge: status = request.uri.utf8.count > maximumTarget ? .uriTooLong : .payloadTooLarge
            case .unknownCommand, .badValue, .invalidArgument, .bindFailed: status = .badRequest
            }
            headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
            body = context.channel.allocator.buffer(string: error.message + "\n")
        }
        headers.add(name: "Content-Length", value: String(body?.readableBytes ?? 0))
        let keepAlive = request.isKeepAlive && status != .payloadTooLarge
        if !keepAlive { headers.add(name: "Connection", value: "close") }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: request.version, status: status, headers: headers))), promise: nil)
        if let body { context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil) }
        let written = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive {
            let channel = context.channel
            written.whenComplete { _ in channel.close(promise: nil) }
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent { context.close(promise: nil) } else { context.fireUserInboundEventTriggered(event) }
    }

    /// Parse errors reach here after NIO's error handler has answered 400.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
