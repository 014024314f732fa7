import NIOHTTP1

extension HTTPServer {
    /// A request read to its end (its body within the server's limit).
    public struct Request: Sendable {
        public let method: HTTPMethod
        /// The request target as sent, query included.
        public let uri: String
        /// The target's path, percent-decoded, without the query.
        public let path: String
        public let headers: HTTPHeaders
        public let body: [UInt8]
        /// The peer's IP address as text (`127.0.0.2`, `fe80::1`), for answering one renderer only.
        public let remoteAddress: String

        public init(method: HTTPMethod, uri: String, path: String, headers: HTTPHeaders, body: [UInt8], remoteAddress: String) {
            self.method = method
            self.uri = uri
            self.path = path
            self.headers = headers
            self.body = body
            self.remoteAddress = remoteAddress
        }
    }

    public enum Body: Sendable {
        case bytes([UInt8])
        /// Each chunk written with backpressure (the next is pulled once the last is written); the
        /// stream's end ends the response (chunked when `length` is nil, or closed for HTTP/1.0).
        /// A client that goes away cancels the stream, so its `onTermination` runs.
        case stream(length: Int64?, AsyncThrowingStream<[UInt8], any Error>)
    }

    public struct Response: Sendable {
        public var status: HTTPResponseStatus
        /// Content-Length and Transfer-Encoding are set by the server from the body; for a HEAD
        /// request a Content-Length given here is kept (it says what a GET would get).
        public var headers: HTTPHeaders
        public var body: Body
        /// Told the size of each body chunk once it has been written to the connection: what was
        /// really served, for statistics.
        public var bodyChunkWritten: (@Sendable (Int) -> Void)?

        public init(status: HTTPResponseStatus, headers: HTTPHeaders = [:], body: Body = .bytes([])) {
            self.status = status
            self.headers = headers
            self.body = body
        }

        /// A short plain-text answer: the sentence says what was wrong.
        public static func text(_ status: HTTPResponseStatus, _ sentence: String, headers: HTTPHeaders = [:]) -> Response {
            var headers = headers
            headers.replaceOrAdd(name: "Content-Type", value: "text/plain; charset=utf-8")
            return Response(status: status, headers: headers, body: .bytes(Array((sentence + "\n").utf8)))
        }
    }

    public typealias Handler = @Sendable (Request) async -> Response
}
