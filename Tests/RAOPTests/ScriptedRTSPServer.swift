import NIOCore
import NIOPosix

/// A hostile or broken "receiver" on loopback: to the first bytes of each connection it answers
/// with a script (garbage, endless headers, a lying Content-Length, no CSeq, silence, a hang-up).
final class ScriptedRTSPServer: Sendable {
    enum Script: Sendable {
        /// Sends these bytes, then keeps the connection open.
        case answer([UInt8])
        /// Sends `count` bytes of header lines that never end, in chunks.
        case endlessHeaders(count: Int)
        /// Closes the connection without a word.
        case hangUp
        /// Reads and never answers.
        case silence
    }

    private let channel: any Channel
    var port: Int { channel.localAddress?.port ?? 0 }

    private init(channel: any Channel) { self.channel = channel }

    static func start(_ script: Script) async throws -> ScriptedRTSPServer {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { child in
                child.eventLoop.makeCompletedFuture { try child.pipeline.syncOperations.addHandler(ScriptHandler(script: script)) }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return ScriptedRTSPServer(channel: channel)
    }

    func stop() async { try? await channel.close() }

    private final class ScriptHandler: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let script: Script

        init(script: Script) { self.script = script }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch script {
            case let .answer(bytes):
                context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: bytes)), promise: nil)
            case let .endlessHeaders(count):
                let line = Array("X-Junk: \(String(repeating: "a", count: 1000))\r\n".utf8)
                var head = Array("RTSP/1.0 200 OK\r\nCSeq: 1\r\n".utf8)
                while head.count < count { head += line }
                context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: head)), promise: nil)
            case .hangUp:
                context.close(promise: nil)
            case .silence:
                break
            }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) { context.close(promise: nil) }
    }
}
