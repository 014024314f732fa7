import NIOCore
import NIOHTTP1

/// Writes a handler's response on its connection: framing headers from the body, no body for HEAD,
/// stream chunks one at a time (each write awaited before the next chunk is pulled), and the
/// connection closed when the client did not ask to keep it or the body could not be finished.
enum HTTPResponseWriter {
    private struct ShortBody: Error {}

    static func write(_ response: HTTPServer.Response, answering request: HTTPRequestHead, on channel: any Channel) async {
        let isHead = request.method == .HEAD
        let isHTTP10 = request.version.major == 1 && request.version.minor == 0
        var headers = response.headers
        var keepAlive = request.isKeepAlive
        headers.remove(name: "transfer-encoding")
        switch response.body {
        case .bytes(let bytes):
            if !(isHead && headers.contains(name: "content-length")) {
                headers.replaceOrAdd(name: "Content-Length", value: String(bytes.count))
            }
        case .stream(let length, _):
            headers.remove(name: "content-length")
            if let length {
                headers.add(name: "Content-Length", value: String(length))
            } else if isHTTP10 {
                keepAlive = false  // HTTP/1.0 has no chunks: the body ends when the connection does
            }  // HTTP/1.1 without a length: NIO's encoder frames it chunked
        }
        if !keepAlive {
            headers.replaceOrAdd(name: "Connection", value: "close")
        } else if isHTTP10 {
            headers.replaceOrAdd(name: "Connection", value: "keep-alive")
        }
        do {
            channel.write(HTTPServerResponsePart.head(HTTPResponseHead(version: request.version, status: response.status, headers: headers)),
                          promise: nil)
            if !isHead {
                switch response.body {
                case .bytes(let bytes):
                    if !bytes.isEmpty {
                        try await channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(channel.allocator.buffer(bytes: bytes)))).get()
                        response.bodyChunkWritten?(bytes.count)
                    }
                case .stream(let length, let stream):
                    try await writeChunks(of: stream, length: length, on: channel, written: response.bodyChunkWritten)
                }
            }
            try await channel.writeAndFlush(HTTPServerResponsePart.end(nil)).get()
            if !keepAlive { try await channel.close() }
        } catch {
            // A client gone, a stream that failed or fell short: the response cannot be finished,
            // and only closing tells the client its body is incomplete.
            channel.close(promise: nil)
        }
    }

    private static func writeChunks(of stream: AsyncThrowingStream<[UInt8], any Error>, length: Int64?, on channel: any Channel,
                                    written report: (@Sendable (Int) -> Void)?) async throws {
        var written: Int64 = 0
        for try await chunk in stream {
            var part = chunk[...]
            if let length { part = part.prefix(Int(min(Int64(part.count), length - written))) }
            if !part.isEmpty {
                try await channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(channel.allocator.buffer(bytes: part)))).get()
                written += Int64(part.count)
                report?(part.count)
            }
            if let length, written >= length { break }
        }
        // A cancelled task (the client left, the server closed) ends the stream early, without an error.
        try Task.checkCancellation()
        if let length, written != length { throw ShortBody() }
    }
}
