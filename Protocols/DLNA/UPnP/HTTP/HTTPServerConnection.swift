import Foundation
import NIOCore
import NIOHTTP1

/// One client connection of an `HTTPServer`: reads a request to its end (refusing bodies over the
/// limit), hands it to the server's handler in a task, and cancels that task when the client goes
/// away (which ends a stream being served). NIO's pipeline handler holds back the next request
/// until the current response has ended, so requests are answered one at a time, in order.
final class HTTPServerConnection: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private enum State {
        case idle
        case receiving(HTTPRequestHead, [UInt8])
        /// Answered 413; the rest of the request is read and dropped until the client closes.
        case refused
        case responding
    }

    private let handler: HTTPServer.Handler
    private let maximumRequestBody: Int
    private var state = State.idle
    private var serving: Task<Void, Never>?

    init(handler: @escaping HTTPServer.Handler, maximumRequestBody: Int) {
        self.handler = handler
        self.maximumRequestBody = maximumRequestBody
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            if let length = head.headers.first(name: "content-length").flatMap(Int.init), length > maximumRequestBody {
                return refuseTooLarge(head, context: context)
            }
            if head.headers.first(name: "expect")?.lowercased() == "100-continue" {
                context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .continue))), promise: nil)
            }
            state = .receiving(head, [])
        case .body(var buffer):
            guard case .receiving(let head, var body) = state else { return }
            guard body.count + buffer.readableBytes <= maximumRequestBody else { return refuseTooLarge(head, context: context) }
            state = .idle  // so that `body` is the only reference and grows in place
            body += buffer.readBytes(length: buffer.readableBytes) ?? []
            state = .receiving(head, body)
        case .end:
            switch state {
            case .receiving(let head, let body):
                state = .responding
                respond(to: head, body: body, context: context)
            case .refused:
                context.close(promise: nil)
            case .idle, .responding:
                break
            }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        serving?.cancel()
        serving = nil
        context.fireChannelInactive()
    }

    /// Parse errors reach here after NIO's error handler has written and flushed its 400.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    private func respond(to head: HTTPRequestHead, body: [UInt8], context: ChannelHandlerContext) {
        let request = HTTPServer.Request(method: head.method, uri: head.uri, path: Self.path(of: head.uri), headers: head.headers,
                                         body: body, remoteAddress: context.channel.remoteAddress?.ipAddress ?? "")
        let channel = context.channel
        let handler = self.handler
        serving = Task {
            let response = await handler(request)
            await HTTPResponseWriter.write(response, answering: head, on: channel)
        }
    }

    /// 413, then the write side is shut so the client sees the answer; whatever it still sends is
    /// dropped until it closes (closing at once could reset the connection under the answer).
    private func refuseTooLarge(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        state = .refused
        let sentence = Array("The request body is longer than the limit of \(maximumRequestBody) bytes.\n".utf8)
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
        headers.add(name: "Content-Length", value: String(sentence.count))
        headers.add(name: "Connection", value: "close")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .payloadTooLarge, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: sentence)))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        context.close(mode: .output, promise: nil)
    }

    /// The path of a request target (origin or absolute form), percent-decoded, without the query.
    static func path(of uri: String) -> String {
        var rest = Substring(uri)
        if let scheme = rest.range(of: "://"), rest[..<scheme.lowerBound].allSatisfy(\.isLetter) {
            rest = rest[scheme.upperBound...]
            rest = rest.firstIndex(of: "/").map { rest[$0...] } ?? "/"
        }
        let path = rest.prefix { $0 != "?" && $0 != "#" }
        return path.removingPercentEncoding ?? String(path)
    }
}
