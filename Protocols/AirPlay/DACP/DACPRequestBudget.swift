import NIOCore

/// Sits before the HTTP decoder and bounds what one request may make the server hold: once more
/// than `limit` bytes arrive before the request ends (a flood of headers, a body no DACP request
/// has), it answers 431 itself and closes, so memory per connection stays bounded whatever is sent.
/// The command handler calls `requestEnded()` after each request, which gives the next its budget.
final class DACPRequestBudget: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let limit: Int
    private var used = 0
    private var exhausted = false

    init(limit: Int) { self.limit = limit }

    func requestEnded() { used = 0 }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !exhausted else { return }
        let buffer = unwrapInboundIn(data)
        used += buffer.readableBytes
        guard used <= limit else {
            exhausted = true
            let sentence = "The request is longer than the limit of \(limit) bytes.\n"
            let answer = "HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: text/plain; charset=utf-8\r\n"
                + "Content-Length: \(sentence.utf8.count)\r\nConnection: close\r\n\r\n" + sentence
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(channel.allocator.buffer(string: answer))).whenComplete { _ in
                channel.close(promise: nil)
            }
            return
        }
        context.fireChannelRead(data)
    }
}
