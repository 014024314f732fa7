import NIOCore
import NIOPosix
import Synchronization

/// A TCP RTSP/1.0 connection to a receiver: numbers each request (CSeq), adds the headers every
/// RAOP request carries, and waits a bounded time for its answer. One request at a time is the
/// session's pattern, but requests sent together are answered in order.
public final class RTSPClient: Sendable {
    /// Headers sent with every request: the sender's identity as AirPlay receivers expect it.
    public let commonHeaders: [(name: String, value: String)]
    public let timeout: Duration
    private let channel: any Channel
    private let nextCSeq = Mutex(1)
    private let whyClosed = Mutex<RAOPError?>(nil)

    /// Why the connection was closed, when it was for a request left unanswered (nil: by either end).
    public var closeReason: RAOPError? { whyClosed.withLock { $0 } }

    /// The address the connection leaves from, and the receiver's: RAOP's URIs and SDP name them.
    public let localAddress: String
    public let remoteAddress: String

    private init(channel: any Channel, commonHeaders: [(name: String, value: String)], timeout: Duration) {
        self.channel = channel
        self.commonHeaders = commonHeaders
        self.timeout = timeout
        localAddress = channel.localAddress?.ipAddress ?? "0.0.0.0"
        remoteAddress = channel.remoteAddress?.ipAddress ?? "0.0.0.0"
    }

    /// Connects to `host`:`port` within `timeout`.
    public static func connect(host: String, port: Int, commonHeaders: [(name: String, value: String)], timeout: Duration = .seconds(5),
                               group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) async throws(RAOPError) -> RTSPClient {
        let bootstrap = ClientBootstrap(group: group)
            .connectTimeout(.milliseconds(timeout.milliseconds))
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(RTSPExchangeHandler()) }
            }
        do {
            let channel = try await bootstrap.connect(host: host, port: port).get()
            return RTSPClient(channel: channel, commonHeaders: commonHeaders, timeout: timeout)
        } catch {
            throw RAOPError(.connectionFailed, "cannot connect to the receiver's RTSP port \(host):\(port): \(error)")
        }
    }

    /// Sends `request` and returns the receiver's answer, whatever its status; throws if no
    /// well-formed answer comes within `timeout` (the connection is then closed).
    public func send(_ request: RTSPRequest) async throws(RAOPError) -> RTSPResponse {
        var request = request
        request.headers = commonHeaders + request.headers
        let cseq = nextCSeq.withLock { value in
            defer { value += 1 }
            return value
        }
        let bytes = try request.encoded(cseq: cseq)
        let promise = channel.eventLoop.makePromise(of: RTSPResponse.self)
        let limit = timeout, method = request.method
        // Whichever comes first completes the promise (a later completion is ignored): the answer,
        // the handler's failure, a write that never reached the handler, or the time limit.
        let timer = channel.eventLoop.scheduleTask(in: .milliseconds(limit.milliseconds)) { [channel, self] in
            let error = RAOPError(.timedOut, "the receiver did not answer \(method) within \(limit)")
            self.whyClosed.withLock { $0 = $0 ?? error }
            promise.fail(error)
            channel.close(promise: nil)
        }
        channel.writeAndFlush(RTSPExchangeHandler.Exchange(bytes: bytes, cseq: cseq, promise: promise)).whenFailure { error in
            promise.fail(error as? RAOPError ?? RAOPError(.connectionClosed, "cannot send \(method): the connection to the receiver is closed (\(error))"))
        }
        defer { timer.cancel() }
        do {
            return try await promise.futureResult.get()
        } catch let error as RAOPError {
            throw error
        } catch {
            throw RAOPError(.connectionClosed, "the RTSP exchange for \(request.method) failed: \(error)")
        }
    }

    /// Returns once the connection is closed, by either end (or a request's time limit).
    public func closed() async {
        try? await channel.closeFuture.get()
    }

    /// Closes the connection (safe to call twice).
    public func close() async {
        try? await channel.close()
    }
}

extension Duration {
    /// Whole milliseconds, for NIO's time amounts.
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
