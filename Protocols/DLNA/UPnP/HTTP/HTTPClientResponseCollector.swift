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
    /// From NIO having the connection (its connect included, when that was still under way) to
    /// the end of the response.
    let timeout: Duration
    let maximumBodyLength: Int
    /// A spare connection for the next request, opened once NIO has written this one.
    let thenOpening: HTTPClientSpareConnection?
    /// Whether NIO took the connection over while it was still being made: a failure before
    /// the answer is then most likely the connect's.
    let isConnecting: Bool
}

/// Runs the one exchange of an `HTTPClient` connection on its event loop: writes the request (or
/// what of it is left, `HTTPClientSentRequest`) as soon as NIO has the connection, then reads the
/// response: its head, its body up to the limit, its end. Whatever comes first of the end, a
/// parse error, a failed write, the deadline or the connection closing settles the request; the
/// later ones find it settled.
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
    /// Whether NIO wrote the request (the rest of it, if it was sent in part before).
    private var isWritten = false

    init(_ exchange: HTTPClientExchange, promise: EventLoopPromise<HTTPClientResponse>) {
        self.exchange = exchange
        self.promise = promise
    }

    func channelActive(context: ChannelHandlerContext) {
        send(context)
        context.fireChannelActive()
    }

    private func send(_ context: ChannelHandlerContext) {
        guard deadline == nil else { return }
        let channel = context.channel
        let milliseconds = exchange.timeout.milliseconds
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: TimeAmount(exchange.timeout)) { [self] in
            if exchange.isConnecting && !isWritten {
                settle(.timedOut, "could not connect to \(exchange.authority) within \(milliseconds) ms", channel)
            } else {
                settle(.timedOut, "timed out after \(milliseconds) ms without a complete response", channel)
            }
        }
        let written = context.eventLoop.makePromise(of: Void.self)
        context.write(wrapOutboundOut(.head(exchange.head)), promise: nil)
        if !exchange.body.isEmpty {
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: exchange.body)))), promise: nil)
        }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: written)
        // A write that fails is often not an error the pipeline hears of (NIO closes the channel
        // with it): a connect under way that fails says so here.
        written.futureResult.assumeIsolated().whenComplete { [self] result in
            switch result {
            case .success:
                isWritten = true
                exchange.thenOpening?.open()
            case .failure(let error):
                settle(.connectionFailed, exchange.isConnecting ? "could not connect to \(exchange.authority): \(Self.reason(error))"
                                                               : "the connection failed: \(Self.reason(error))", channel)
            }
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let received):
            // 100 Continue and other interim answers come before the real one.
            if (100..<200).contains(received.status.code) && received.status.code != 101 { return }
            head = received
        case .body(var buffer):
            guard body.count + buffer.readableBytes <= maximumBodyLength else {
                settle(.bodyTooLarge, "the response body is longer than the limit of \(maximumBodyLength) bytes", context.channel)
                return
            }
            body += buffer.readBytes(length: buffer.readableBytes) ?? []
        case .end:
            if let head {
                promise.succeed(HTTPClientResponse(status: head.status, headers: head.headers, body: body))
            } else {
                settle(.malformedResponse, "the response ended before its status line", context.channel)
            }
            context.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let parseError = error as? HTTPParserError {
            settle(.malformedResponse, "the response is not valid HTTP/1.1 (\(parseError))", context.channel)
        } else if exchange.isConnecting && !isWritten {
            settle(.connectionFailed, "could not connect to \(exchange.authority): \(Self.reason(error))", context.channel)
        } else {
            settle(.connectionFailed, "the connection failed: \(Self.reason(error))", context.channel)
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

    /// Fails the request (unless it was settled already) and closes the connection.
    private func settle(_ kind: HTTPClientError.Kind, _ reason: String, _ channel: any Channel) {
        promise.fail(HTTPClientError(kind, request, reason))
        channel.close(promise: nil)
    }

    /// An I/O error as the system says it ("Connection refused"), anything else as it describes itself.
    private static func reason(_ error: any Error) -> String {
        if let ioError = error as? IOError { String(cString: strerror(ioError.errnoCode)) } else { "\(error)" }
    }
}
