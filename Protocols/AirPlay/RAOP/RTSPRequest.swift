/// One RTSP/1.0 request as RAOP sends it: method, URI, headers and body, written with the
/// session's CSeq. Header names and values are checked, so nothing the caller passes can split
/// the request.
public struct RTSPRequest: Sendable {
    public var method: String
    public var uri: String
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(method: String, uri: String, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.method = method
        self.uri = uri
        self.headers = headers
        self.body = body
    }

    /// The request's bytes, with `CSeq` first and `Content-Length` when there is a body.
    public func encoded(cseq: Int) throws(RAOPError) -> [UInt8] {
        for text in [method, uri] + headers.flatMap({ [$0.name, $0.value] }) where text.utf8.contains(where: { $0 == 13 || $0 == 10 }) {
            throw RAOPError(.invalidArgument, "an RTSP \(method) request cannot carry a line break (in \"\(text.prefix(40))\")")
        }
        var head = "\(method) \(uri) RTSP/1.0\r\nCSeq: \(cseq)\r\n"
        for header in headers { head += "\(header.name): \(header.value)\r\n" }
        if !body.isEmpty { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        return Array(head.utf8) + body
    }
}
