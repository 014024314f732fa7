import Glibc
import Logging
import NIOCore
import OpenChannels
import NIOHTTP1
import NIOPosix

/// The HTTP endpoint app servers push to, shaped like APNs's provider API over HTTP/1.1 (APNs
/// itself speaks HTTP/2, which this does not): `POST /3/device/TOKEN` with the app's topic, push
/// type and bearer credential, and the `aps` payload. Each request is checked (`PushRequest`)
/// and, if valid, handed to `deliver`; the answer is 200 with `apns-id`, or the refusal's status
/// with `{"reason", "message"}`. Bounded: one request at a time per connection (later ones wait),
/// 4096 bytes of body at most (refused while it arrives, never held), a deadline for each request
/// to arrive whole, and a cap on connections (more are answered 503 and closed).
public final class PushEndpoint: Sendable {
    public typealias Delivery = @Sendable (PushRequest) async throws(PushRefusal) -> Void

    public struct Limits: Sendable {
        /// How long a request may take to arrive whole (and a connection may wait for its next).
        public var requestDeadline: Duration
        /// Connections open at once.
        public var connections: Int

        public init(requestDeadline: Duration = .seconds(10), connections: Int = 64) {
            self.requestDeadline = requestDeadline
            self.connections = connections
        }
    }

    /// Why the endpoint could not listen, as a sentence.
    public struct ListenFailure: Error, CustomStringConvertible {
        public let description: String
    }

    /// The address it listens on, with the port it got.
    public let address: PushListenAddress
    private let listener: any Channel
    private let connections: OpenChannels

    private init(address: PushListenAddress, listener: any Channel, connections: OpenChannels) {
        self.address = address
        self.listener = listener
        self.connections = connections
    }

    /// Listens on `requested` (port 0: any free port) and serves pushes on NIO's threads.
    public static func start(at requested: PushListenAddress, credentials: PushCredentials, limits: Limits = Limits(), logger: Logger,
                             deliver: @escaping Delivery) async throws(ListenFailure) -> PushEndpoint {
        let connections = OpenChannels(limit: limits.connections)
        let overloaded = PushRefusal(.serviceUnavailable, "the push endpoint already serves \(limits.connections) connections, its limit; send over a connection you have open, or try again")
        let listener: any Channel
        do {
            listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
                .childChannelInitializer { channel in
                    let admitted = connections.admit(channel)
                    if !admitted { logger.warning("refused a push connection from \(channel.remoteAddress?.description ?? "?"): \(overloaded.message)") }
                    return channel.eventLoop.makeCompletedFuture {
                        // Refused: only the encoder, for the 503; what the client sends is not parsed.
                        if admitted { try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true) }
                        else { try channel.pipeline.syncOperations.addHandler(HTTPResponseEncoder()) }
                        try channel.pipeline.syncOperations.addHandler(
                            PushConnectionHandler(credentials: credentials, deadline: limits.requestDeadline, logger: logger, deliver: deliver,
                                                  refusingAll: admitted ? nil : overloaded))
                    }
                }
                .bind(host: requested.host, port: requested.port).get()
        } catch let error as IOError {
            throw ListenFailure(description: "cannot listen for pushes on \(requested): \(String(cString: strerror(error.errnoCode)))")
        } catch {
            throw ListenFailure(description: "cannot listen for pushes on \(requested): \(error)")
        }
        let bound = PushListenAddress(host: requested.host, port: listener.localAddress?.port ?? requested.port)
        return PushEndpoint(address: bound, listener: listener, connections: connections)
    }

    /// Stops accepting and closes open connections; safe to call twice.
    public func stop() async {
        try? await listener.close()
        await connections.closeAll()
    }
}
