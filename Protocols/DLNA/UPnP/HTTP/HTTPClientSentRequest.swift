import NIOCore
import NIOHTTP1

/// A request `HTTPClient` sent itself, in part or whole, before NIO took its connection over (see
/// `DirectTCPSocket`): the first outbound handler, it lets NIO's encoder see the request (its
/// decoder learns the method from it: a HEAD's answer has no body) and puts in place of what it
/// encoded the bytes not sent yet. Later writes carry nothing, the request being whole; they
/// complete with the first, when the bytes left are written (or could not be).
final class HTTPClientSentRequest: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    private let unsent: [UInt8]
    private var first: EventLoopFuture<Void>?

    init(unsent: ArraySlice<UInt8>) {
        self.unsent = Array(unsent)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if let first {
            if let promise { first.cascade(to: promise) }
            return
        }
        let written = promise ?? context.eventLoop.makePromise()
        first = written.futureResult
        if unsent.isEmpty {
            written.succeed()
        } else {
            context.write(wrapOutboundOut(.byteBuffer(context.channel.allocator.buffer(bytes: unsent))), promise: written)
        }
    }

    /// The request as HTTP/1.1 puts it on the wire (its headers checked by `HTTPClient` first).
    static func bytes(of head: HTTPRequestHead, body: [UInt8]) -> [UInt8] {
        var text = "\(head.method.rawValue) \(head.uri) HTTP/1.1\r\n"
        for (name, value) in head.headers { text += "\(name): \(value)\r\n" }
        text += "\r\n"
        return Array(text.utf8) + body
    }
}
