import NIOCore

/// The NIO handler under `RTSPClient`: writes each request and hands the next complete answer to
/// the request's promise, in order (RTSP answers come back in request order on one connection).
/// Bytes are buffered only up to one answer's limits; whatever breaks the exchange fails every
/// waiting request with the reason and closes the connection.
final class RTSPExchangeHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = Exchange
    typealias OutboundOut = ByteBuffer

    struct Exchange: Sendable {
        let bytes: [UInt8]
        let cseq: Int
        let promise: EventLoopPromise<RTSPResponse>
    }

    private var received: [UInt8] = []
    private var waiting: [Exchange] = []
    private var failure: RAOPError?

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let exchange = unwrapOutboundIn(data)
        if let failure {
            exchange.promise.fail(failure)
            promise?.fail(failure)
            return
        }
        waiting.append(exchange)
        context.write(wrapOutboundOut(context.channel.allocator.buffer(bytes: exchange.bytes)), promise: promise)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard failure == nil else { return }
        received.append(contentsOf: unwrapInboundIn(data).readableBytesView)
        do throws(RAOPError) {
            while let (response, length) = try RTSPResponse.parse(received) {
                received.removeFirst(length)
                guard let exchange = waiting.first else {
                    throw RAOPError(.malformedResponse, "the receiver sent an answer (status \(response.status)) to no request")
                }
                guard let cseq = response.cseq else {
                    throw RAOPError(.malformedResponse, "the receiver's answer to CSeq \(exchange.cseq) carries no CSeq")
                }
                guard cseq == exchange.cseq else {
                    throw RAOPError(.malformedResponse, "the receiver answered CSeq \(cseq) where \(exchange.cseq) was due")
                }
                waiting.removeFirst()
                exchange.promise.succeed(response)
            }
        } catch {
            fail(context: context, error)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(context: context, error as? RAOPError ?? RAOPError(.connectionClosed, "the connection to the receiver broke: \(error)"))
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(context: context, RAOPError(.connectionClosed, "the receiver closed the RTSP connection"))
        context.fireChannelInactive()
    }

    private func fail(context: ChannelHandlerContext, _ error: RAOPError) {
        if failure == nil { failure = error }
        received = []
        let failed = waiting
        waiting = []
        for exchange in failed { exchange.promise.fail(failure ?? error) }
        context.close(promise: nil)
    }
}
