import Glibc
import NIOCore
import NIOHTTP1

/// Reads the one response of an `HTTPClient` connection: its head, its body up to the limit, its
/// end. Whatever comes first of the end, a parse error or the connection closing settles the
/// request; the later ones find it settled.
final class HTTPClientResponseCollector: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart

    private let promise: EventLoopPromise<HTTPClientResponse>
    private let request: String
    private let maximumBodyLength: Int
    private var head: HTTPResponseHead?
    private var body: [UInt8] = []

    init(promise: EventLoopPromise<HTTPClientResponse>, request: String, maximumBodyLength: Int) {
        self.promise = promise
        self.request = request
        self.maximumBodyLength = maximumBodyLength
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let received):
            // 100 Continue and other interim answers come before the real one.
            if (100..<200).contains(received.status.code) && received.status.code != 101 { return }
            head = received
        case .body(var buffer):
            guard body.count + buffer.readableBytes <= maximumBodyLength else {
                fail(.bodyTooLarge, "the response body is longer than the limit of \(maximumBodyLength) bytes", context)
                return
            }
            body += buffer.readBytes(length: buffer.readableBytes) ?? []
        case .end:
            if let head {
                promise.succeed(HTTPClientResponse(status: head.status, headers: head.headers, body: body))
            } else {
                fail(.malformedResponse, "the response ended before its status line", context)
            }
            context.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let parseError = error as? HTTPParserError {
            fail(.malformedResponse, "the response is not valid HTTP/1.1 (\(parseError))", context)
        } else if let ioError = error as? IOError {
            fail(.connectionFailed, "the connection failed: \(String(cString: strerror(ioError.errnoCode)))", context)
        } else {
            fail(.connectionFailed, "the connection failed: \(error)", context)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if head == nil {
            promise.fail(HTTPClientError(.connectionFailed, request, "the server closed the connection without answering"))
        } else {
            promise.fail(HTTPClientError(.malformedResponse, request, "the server closed the connection in the middle of the response"))
        }
        context.fireChannelInactive()
    }

    private func fail(_ kind: HTTPClientError.Kind, _ reason: String, _ context: ChannelHandlerContext) {
        promise.fail(HTTPClientError(kind, request, reason))
        context.close(promise: nil)
    }
}
