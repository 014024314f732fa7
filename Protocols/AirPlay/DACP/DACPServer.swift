import AvahiDiscovery
import Glibc
import NIOCore
import OpenChannels
import NIOHTTP1
import NIOPosix
import Synchronization

/// The remote control of one AirPlay session, as a receiver reaches it: an HTTP server on a port of
/// its own, published in DNS-SD as `iTunes_Ctrl_<DACP-ID>` (`_dacp._tcp`), that takes
/// `GET /ctrl-int/1/<command>` with the session's `Active-Remote` and reports each command, in the
/// order they arrive, to its handler. Anything else is answered with an HTTP error and reported
/// nowhere: a wrong or missing `Active-Remote` 403, an unknown command or a bad value 400, an
/// oversized request 414/431. Memory is bounded: a few connections at a time, each with a byte
/// budget per request, closed when idle.
public final class DACPServer: Sendable {
    /// What a server accepts at most.
    public struct Limits: Sendable {
        /// Bytes one request (line, headers, body) may take before it is refused with 431.
        public var requestBytes: Int
        /// The longest request target (414 beyond).
        public var targetBytes: Int
        /// Connections open at once; more are closed at once.
        public var connections: Int
        /// A connection that sends nothing for this long is closed.
        public var idle: TimeAmount

        public init(requestBytes: Int = 4096, targetBytes: Int = 512, connections: Int = 8, idle: TimeAmount = .seconds(30)) {
            self.requestBytes = requestBytes
            self.targetBytes = targetBytes
            self.connections = connections
            self.idle = idle
        }
    }

    public let session: DACPSession
    /// The TCP port it serves on (and publishes).
    public let port: Int
    private let listener: any Channel
    private let connections: OpenChannels
    private let publication: Mutex<ServicePublication?>
    private let tally: DACPTally

    private init(session: DACPSession, port: Int, listener: any Channel, connections: OpenChannels, tally: DACPTally) {
        self.session = session
        self.port = port
        self.listener = listener
        self.connections = connections
        self.tally = tally
        self.publication = Mutex(nil)
    }

    /// Commands reported and requests refused so far.
    public var counters: (accepted: Int, refused: Int) {
        (tally.accepted.load(ordering: .relaxed), tally.refused.load(ordering: .relaxed))
    }

    /// Binds `host:port` (0: any free port) and, if `avahi` is given, publishes the service there
    /// (`onPublication` hears whether it was announced; Avahi renaming it on a collision would hide
    /// it from the receiver, so that is reported as a failure). `handler` gets each valid command, on
    /// one of NIO's threads, in arrival order; `onRefused`, each refusal, for the log.
    public static func start(session: DACPSession, host: String = "0.0.0.0", port: Int = 0, avahi: AvahiConnection? = nil, limits: Limits = Limits(),
                             group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
                             onPublication: @escaping @Sendable (ServicePublication.Event) -> Void = { _ in },
                             onRefused: @escaping @Sendable (DACPError) -> Void = { _ in },
                             handler: @escaping @Sendable (DACPCommand) -> Void) async throws(DACPError) -> DACPServer {
        let connections = OpenChannels(limit: limits.connections)
        let tally = DACPTally()
        let listener: any Channel
        do {
            listener = try await ServerBootstrap(group: group)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
                .childChannelInitializer { channel in
                    guard connections.admit(channel) else { return channel.close() }
                    return channel.eventLoop.makeCompletedFuture {
                        let budget = DACPRequestBudget(limit: limits.requestBytes)
                        try channel.pipeline.syncOperations.addHandler(budget)
                        // Framing headers are ours: NIO would drop Content-Length from a 204, and receivers
                        // (shairport-sync's HTTP reader) then wait for the end of a body until they time out.
                        var encoder = HTTPResponseEncoder.Configuration()
                        encoder.automaticallySetFramingHeaders = false
                        try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true, withEncoderConfiguration: encoder)
                        try channel.pipeline.syncOperations.addHandler(IdleStateHandler(readTimeout: limits.idle))
                        try channel.pipeline.syncOperations.addHandler(DACPConnectionHandler(session: session, maximumTarget: limits.targetBytes, budget: budget) { result in
                            switch result {
                            case .success(let command):
                                tally.accepted.add(1, ordering: .relaxed)
                                handler(command)
                            case .failure(let error):
                                tally.refused.add(1, ordering: .relaxed)
                                onRefused(error)
                            }
                        })
                    }
                }
                .bind(host: host, port: port).get()
        } catch let error as IOError {
            throw DACPError(.bindFailed, "cannot listen for DACP on \(host):\(port): \(String(cString: strerror(error.errnoCode)))")
        } catch {
            throw DACPError(.bindFailed, "cannot listen for DACP on \(host):\(port): \(error)")
        }
        let server = DACPServer(session: session, port: listener.localAddress?.port ?? port, listener: listener, connections: connections, tally: tally)
        if let avahi {
            let expected = session.serviceName
            let publication = ServicePublication(name: expected, type: "_dacp._tcp", port: UInt16(server.port), txt: server.txt, on: avahi) { event in
                if case .established(let name) = event, name != expected {
                    onPublication(.failed("announced as \"\(name)\" after a name collision: the receiver looks for \"\(expected)\" only"))
                } else {
                    onPublication(event)
                }
            }
            server.publication.withLock { $0 = publication }
        }
        return server
    }

    /// The TXT record iTunes publishes with its remote control: the receiver reads the name only,
    /// but these are what a DACP browser expects to see.
    var txt: [(String, String)] {
        [("txtvers", "1"), ("Ver", "131073"), ("DbId", session.dacpID), ("OSsi", "0x1F5")]
    }

    /// Withdraws the service, stops accepting and closes open connections. Safe to call twice.
    public func stop() async {
        publication.withLock { publication in
            publication?.cancel()
            publication = nil
        }
        try? await listener.close()
        await connections.closeAll()
    }
}

/// Commands reported and requests refused, counted from the connections' threads.
private final class DACPTally: Sendable {
    let accepted = Atomic<Int>(0)
    let refused = Atomic<Int>(0)
}
