import NIOHTTP1

/// A whole response, read to its end: SOAP answers and descriptions are small and parsed at once.
public struct HTTPClientResponse: Sendable {
    public var status: HTTPResponseStatus
    public var headers: HTTPHeaders
    public var body: [UInt8]

    public init(status: HTTPResponseStatus, headers: HTTPHeaders, body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}
