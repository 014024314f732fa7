import Glibc
import NIOCore
import NIOHTTP1

/// The one request of an `HTTPClient` connection and what it needs to be sent and read.
struct HTTPClientExchange: Sendable {
    /// "METHOD URL", for errors.
    let request: String
    /// "host:port", for errors.
    let authority: String
    let head: HTTPRequestHead
    let body: [UInt8]
    /// From the connection being up to the end of the response.
    let timeout: Duration
    let maximumBodyLength: Int
    /// A spare connection for the next request, opened once this one is written (when NIO writes it).
    let thenOpening: HTTPClientSpareConnection?
    /// Whether NIO took the connection over while it was still being made: a failure before
    /// the answer is then most likely the connect's.
    let isConnecting: Bool
}

/// Runs the one exchange of an `HTTPClient` connection on its event loop: writes the request as
/// soon as the connection is up, then reads the response: its head, its body up to the limit,
/// its end. Whatever comes first of the end, a parse error, the deadline or the connection
/// closing settles the request; the later ones find it settled.
final class HTTPClientResponseCollector: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    private let exchange: HTTPClientExchange
    private let promise: EventLoopPromise<HTTPClientResponse>
    private var request: String { exchange.request }
    private var maximumBodyLength: Int { exchange.maximumBodyLength }
    private var head: HTTPResponseHead?
    private var body: [UInt8] = []
    private var deadline: Scheduled<Void>?

    init(_ exchange: HTTPClientExchange, promise: EventLoopPromise<HTTPClientResponse>) {
        self.exchange = exchange
        self.promise = promise
    }

    func channelActive(context: ChannelHandlerContext) {
        send(context)
        context.fireChannelActive()
    }

    /// A connection that was up already (a spare one) hears no `channelActive`: the request goes now.
    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { send(context) }
    }

    private func send(_ context: ChannelHandlerContext) {
        guard deadline == nil else { return }
        let channel = context.channel
        let (promise, request, milliseconds) = (promise, request, exchange.timeout.milliseconds)
        deadline = context.eventLoop.scheduleTask(in: TimeAmount(exchange.timeout)) {
            promise.fail(HTTPClientError(.timedOut, request, "timed out after \(milliseconds) ms without a complete response"))
            channel.close(promise: nil)
        }
        context.write(wrapOutboundOut(.head(exchange.head)), promise: nil)
        if !exchange.body.isEmpty {
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: exchange.body)))), promise: nil)
        }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        exchange.thenOpening?.open()
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
        } else if let ioError = error as? IOError, exchange.isConnecting, head == nil {
            fail(.connectionFailed, "could not connect to \(exchange.authority): \(String(cString: strerror(ioError.errnoCode)))", context)
        } else if let ioError = error as? IOError {
            fail(.connectionFailed, "the connection failed: \(String(cString: strerror(ioError.errnoCode)))", context)
        } else {
            fail(.connectionFailed, "the connection failed: \(error)", context)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline?.cancel()
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
