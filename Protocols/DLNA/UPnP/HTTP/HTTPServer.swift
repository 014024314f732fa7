import Glibc
import NIOCore
import OpenChannels
import NIOHTTP1
import NIOPosix

/// A small HTTP/1.1 server: the DLNA driver's GENA callback (NOTIFY) and media server share one
/// per local address, so a renderer reaches both on the address it was told.
public final class HTTPServer: Sendable {
    public let host: String
    public let port: Int
    private let listener: any Channel
    private let connections: OpenChannels

    private init(host: String, port: Int, listener: any Channel, connections: OpenChannels) {
        self.host = host
        self.port = port
        self.listener = listener
        self.connections = connections
    }

    /// Binds host:port (port 0 = any) and serves until closed. Request bodies over
    /// `maximumRequestBody` get 413; malformed requests 400; the connection is kept alive when the
    /// client asks. `sendBufferSize` fixes each connection's kernel send buffer (otherwise grown
    /// by the kernel, to megabytes for a client that reads slowly).
    public static func start(host: String, port: Int = 0, maximumRequestBody: Int = 256 << 10, sendBufferSize: Int32? = nil,
                             group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
                             handler: @escaping Handler) async throws -> HTTPServer {
        let connections = OpenChannels()
        let listener: any Channel
        do {
            var bootstrap = ServerBootstrap(group: group)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            if let sendBufferSize { bootstrap = bootstrap.childChannelOption(.socketOption(.so_sndbuf), value: SocketOptionValue(sendBufferSize)) }
            listener = try await bootstrap
                .childChannelInitializer { channel in
                    guard connections.admit(channel) else { return channel.close() }
                    return channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                        try channel.pipeline.syncOperations.addHandler(
                            HTTPServerConnection(handler: handler, maximumRequestBody: maximumRequestBody))
                    }
                }
                .bind(host: host, port: port).get()
        } catch let error as IOError {
            throw HTTPServerError(description: "Could not listen for HTTP on \(host):\(port): \(String(cString: strerror(error.errnoCode)))")
        } catch {
            throw HTTPServerError(description: "Could not listen for HTTP on \(host):\(port): \(error)")
        }
        return HTTPServer(host: host, port: listener.localAddress?.port ?? port, listener: listener, connections: connections)
    }

    /// Stops accepting and closes open connections (ending the streams being served).
    public func close() async {
        try? await listener.close()
        await connections.closeAll()
    }
}
