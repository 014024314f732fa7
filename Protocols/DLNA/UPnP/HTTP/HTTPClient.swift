import Foundation
import Glibc
import MediaRouteIPC
import NIOCore
import NIOHTTP1
import NIOPosix

/// One HTTP/1.1 request and its whole response, for SOAP, device descriptions and GENA
/// (SUBSCRIBE/UNSUBSCRIBE are custom methods: `HTTPMethod.RAW(value:)`).
///
/// Every request has a connection of its own (`Connection: close`): renderers are slow to answer
/// and quick to drop idle connections, so reuse would buy little and cost a retry path.
public struct HTTPClient: Sendable {
    private let group: any EventLoopGroup

    public init(group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) {
        self.group = group
    }

    /// Sends the request and reads the response to its end; `timeout` covers connecting, and
    /// then the response. A cancelled task gets a `.connectionFailed` error saying it was cancelled.
    ///
    /// To an address (what renderers put in their URLs), the request is sent from the calling
    /// thread (see `DirectTCPSocket`), and the caller's task is woken once, with the answer: each
    /// hop between it and the event loop cost tens of microseconds, and a renderer is listed only
    /// after two of these exchanges.
    public func send(_ method: HTTPMethod, _ url: URL, headers: HTTPHeaders = [:], body: [UInt8] = [],
                     timeout: Duration = .seconds(5), maximumBodyLength: Int = 2 << 20) async throws(HTTPClientError) -> HTTPClientResponse {
        let (response, connected) = exchange(method, url, headers: headers, body: body, timeout: timeout, maximumBodyLength: maximumBodyLength, on: group.next())
        do {
            return try await withTaskCancellationHandler {
                try await response.futureResult.get()
            } onCancel: {
                response.fail(HTTPClientError(.connectionFailed, "\(method.rawValue) \(url.absoluteString)", "the request was cancelled"))
                connected?.whenSuccess { $0.close(promise: nil) }
            }
        } catch let error as HTTPClientError {
            throw error
        } catch {
            throw HTTPClientError(.connectionFailed, "\(method.rawValue) \(url.absoluteString)", "the connection failed: \(error)")
        }
    }

    /// The same exchange as `send`, its answer read on `loop`, for work that goes on there with
    /// it: a chain of requests made from `loop`'s own callbacks wakes no other thread. The future
    /// fails with an `HTTPClientError`.
    /// `spare`, a connection made for a request not known yet, carries it if it goes to the
    /// same server, is still up, carried no other and was not idle too long; otherwise a
    /// connection of its own is made. `thenOpening`, a spare for the next request, starts
    /// connecting once this one is sent.
    public func response(_ method: HTTPMethod, _ url: URL, headers: HTTPHeaders = [:], body: [UInt8] = [],
                         timeout: Duration = .seconds(5), maximumBodyLength: Int = 2 << 20, on loop: any NIOCore.EventLoop,
                         over spare: HTTPClientSpareConnection? = nil, thenOpening next: HTTPClientSpareConnection? = nil) -> EventLoopFuture<HTTPClientResponse> {
        exchange(method, url, headers: headers, body: body, timeout: timeout, maximumBodyLength: maximumBodyLength, on: loop, over: spare, thenOpening: next)
            .response.futureResult
    }

    /// A connection to `url`'s server for a request made later with `response(...over:)`: it is
    /// made while something else is awaited (a renderer's description, when GetProtocolInfo goes
    /// to the same server next), starting when the request passed it as `thenOpening` is sent.
    /// It carries one request, if that comes within `maximumIdle` of its opening. Nil when `url`
    /// names no address (a host name would be resolved first). Close it (`close()`) once it is
    /// not wanted, used or not.
    public func spareConnection(to url: URL, maximumIdle: Duration = .seconds(1)) -> HTTPClientSpareConnection? {
        guard let target = try? Self.target(of: url, request: "CONNECT \(url.absoluteString)"),
              let address = try? SocketAddress(ipAddress: target.host, port: target.port) else { return nil }
        return HTTPClientSpareConnection(address: address, maximumIdle: maximumIdle)
    }

    /// An event loop of the client's group, for `response(_:_:on:)`.
    public func nextLoop() -> any NIOCore.EventLoop { group.next() }

    /// Starts the exchange on `loop`: the response's promise, and the connection being made (nil
    /// when the URL was refused, the promise failed already).
    private func exchange(_ method: HTTPMethod, _ url: URL, headers: HTTPHeaders, body: [UInt8], timeout: Duration, maximumBodyLength: Int,
                          on loop: any NIOCore.EventLoop, over spare: HTTPClientSpareConnection? = nil,
                          thenOpening next: HTTPClientSpareConnection? = nil) -> (response: EventLoopPromise<HTTPClientResponse>, connected: EventLoopFuture<any Channel>?) {
        let request = "\(method.rawValue) \(url.absoluteString)"
        let promise = loop.makePromise(of: HTTPClientResponse.self)
        let target: Target
        do { target = try Self.target(of: url, request: request) } catch {
            promise.fail(error)
            return (promise, nil)
        }
        let milliseconds = timeout.milliseconds
        var head = HTTPRequestHead(version: .http1_1, method: method, uri: target.path, headers: headers)
        if !head.headers.contains(name: "host") { head.headers.add(name: "Host", value: target.authority) }
        if !body.isEmpty || method == .POST || method == .PUT {
            head.headers.replaceOrAdd(name: "Content-Length", value: String(body.count))
        }
        head.headers.replaceOrAdd(name: "Connection", value: "close")
        if let name = head.headers.first(where: { !Self.canBeSent($0.name, $0.value) })?.name {
            promise.fail(HTTPClientError(.invalidHeader, request, "the header \(name.debugDescription) cannot be sent: a name must be a token, and a value hold no control character but tabs"))
            return (promise, nil)
        }
        let describe = { (next: HTTPClientSpareConnection?, isConnecting: Bool, body: [UInt8]) in
            HTTPClientExchange(request: request, authority: target.authority, head: head, body: body, timeout: timeout,
                               maximumBodyLength: maximumBodyLength, thenOpening: next, isConnecting: isConnecting)
        }
        let connected: EventLoopFuture<any Channel>
        if let address = try? SocketAddress(ipAddress: target.host, port: target.port) {
            // An address (what renderers put in their URLs): connected to and sent to from here,
            // over the spare if it is fit for it (see `DirectTCPSocket`); NIO reads the answer.
            let wire = HTTPClientSentRequest.bytes(of: head, body: body)
            // The spare if it is fit; one the server dropped as it was used, or none, gives way
            // to a connection of its own.
            var trySpare = spare?.address == address
            while true {
                let socket: DirectTCPSocket
                let isSpare = trySpare
                trySpare = false
                if isSpare, let claimed = spare?.claim() {
                    socket = claimed
                } else {
                    switch DirectTCPSocket.open(to: address) {
                    case .opened(let opened): socket = opened
                    case .failed(let code): return Self.failed(promise, connecting: code, request, target.authority)
                    }
                }
                let sent: Int
                switch socket.send(wire) {
                case .failed where isSpare: continue
                case .failed(let code): return Self.failed(promise, connecting: code, request, target.authority)
                case .connecting: sent = 0
                case .sent(let count): sent = count
                }
                let sentWhole = sent == wire.count
                // What is left goes once NIO has the connection, and the spare is opened after it.
                let exchange = describe(sentWhole ? nil : next, sent == 0, [])
                connected = ClientBootstrap(group: loop).channelInitializer(Self.pipeline(exchange, promise, unsent: wire[sent...]))
                    .withConnectedSocket(socket.take())
                if sentWhole { next?.open() }
                break
            }
        } else {
            // By name: NIO resolves it on a thread pool first, a millisecond or more per request.
            connected = ClientBootstrap(group: loop)
                .connectTimeout(TimeAmount(timeout))
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .channelInitializer(Self.pipeline(describe(next, false, body), promise))
                .connect(host: target.host, port: target.port)
        }
        connected.whenFailure { error in
            promise.fail(Self.connectError(error, request: request, address: target.authority, milliseconds: milliseconds))
        }
        return (promise, connected)
    }

    /// The handlers of an exchange's connection; with `unsent`, what is left of a request sent
    /// before NIO took the connection (`HTTPClientSentRequest`), whose head was checked already
    /// (NIO's check would come after it went out).
    private static func pipeline(_ exchange: HTTPClientExchange, _ promise: EventLoopPromise<HTTPClientResponse>,
                                 unsent: ArraySlice<UInt8>? = nil) -> @Sendable (any Channel) -> EventLoopFuture<Void> {
        { channel in
            channel.eventLoop.makeCompletedFuture {
                if let unsent { try channel.pipeline.syncOperations.addHandler(HTTPClientSentRequest(unsent: unsent)) }
                try channel.pipeline.syncOperations.addHTTPClientHandlers(enableOutboundHeaderValidation: unsent == nil)
                try channel.pipeline.syncOperations.addHandler(HTTPClientResponseCollector(exchange, promise: promise))
            }
        }
    }

    /// RFC 9110's rules for a field, as NIO's own check has them (a name of token characters; a
    /// value without control characters but tabs): a line break could end the head early and
    /// smuggle in a request of its own.
    private static func canBeSent(_ name: String, _ value: String) -> Bool {
        !name.isEmpty && name.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || "!#$%&'*+-.^_`|~".utf8.contains(byte)
        } && value.utf8.allSatisfy { $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }
    }

    /// Fails the request with a connect's error, from the calling thread.
    private static func failed(_ promise: EventLoopPromise<HTTPClientResponse>, connecting code: CInt, _ request: String,
                               _ authority: String) -> (response: EventLoopPromise<HTTPClientResponse>, connected: EventLoopFuture<any Channel>?) {
        promise.fail(HTTPClientError(.connectionFailed, request, "could not connect to \(authority): \(String(cString: strerror(code)))"))
        return (promise, nil)
    }

    /// Where to connect and what to ask for.
    private struct Target {
        var host: String
        var port: Int
        /// `host:port` as the Host header wants it (IPv6 literals in brackets).
        var authority: String
        /// The request target: path and query, percent-encoded as in the URL.
        var path: String
    }

    private static func target(of url: URL, request: String) throws(HTTPClientError) -> Target {
        guard url.scheme?.lowercased() == "http" else {
            throw HTTPClientError(.invalidURL, request, "only http:// URLs are accepted, not \(url.scheme.map { "\($0)://" } ?? "a URL without a scheme")")
        }
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false), var host = components.host, !host.isEmpty else {
            throw HTTPClientError(.invalidURL, request, "the URL names no host")
        }
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let port = components.port ?? 80
        guard (1...65535).contains(port) else { throw HTTPClientError(.invalidURL, request, "port \(port) is out of range") }
        var path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        if let query = components.percentEncodedQuery { path += "?" + query }
        let hostText = host.contains(":") ? "[\(host)]" : host
        return Target(host: host, port: port, authority: port == 80 ? hostText : "\(hostText):\(port)", path: path)
    }

    private static func connectError(_ error: any Error, request: String, address: String, milliseconds: Int64) -> HTTPClientError {
        if case ChannelError.connectTimeout = error {
            return HTTPClientError(.timedOut, request, "could not connect to \(address) within \(milliseconds) ms")
        }
        var cause: any Error = error
        if let connection = error as? NIOConnectionError, let first = connection.connectionErrors.first {
            cause = first.error
        }
        if let ioError = cause as? IOError {
            return HTTPClientError(.connectionFailed, request, "could not connect to \(address): \(String(cString: strerror(ioError.errnoCode)))")
        }
        return HTTPClientError(.connectionFailed, request, "could not connect to \(address): \(cause)")
    }
}
