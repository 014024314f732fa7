import Foundation
import Glibc
import MediaRouteIPC

/// One HTTP/1.1 POST, written and read by hand over `TCPSocket` (the CLI has no HTTP library, and
/// one request with `connection: close` needs only this): the request as a server sends it, and the
/// answer read to the end of the connection.
enum PushPost {
    struct Answer {
        let status: Int
        let headers: [(name: String, value: String)]
        let body: [UInt8]

        func header(_ name: String) -> String? { headers.first { $0.name.lowercased() == name }?.value }
    }

    /// The most of an answer read; the endpoint's are far shorter.
    static let answerLimit = 65536

    /// POSTs `body` to `endpoint` (`HOST:PORT`, numeric IPv4) at `path` with `headers`.
    static func send(to endpoint: String, path: String, headers: [(String, String)], body: [UInt8]) async throws -> Answer {
        guard let colon = endpoint.lastIndex(of: ":"), let port = UInt16(endpoint[endpoint.index(after: colon)...]) else {
            throw CLIError("mediarouted reports its push endpoint as \"\(endpoint)\", which is not HOST:PORT")
        }
        let host = String(endpoint[..<colon])
        let fd: Int32
        do { fd = try await TCPSocket.connect(host: host, port: port, timeout: .seconds(5)) } catch {
            throw CLIError("cannot reach the push endpoint at \(endpoint): \(error)")
        }
        var request = "POST \(path) HTTP/1.1\r\nhost: \(endpoint)\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        request += "content-length: \(body.count)\r\nconnection: close\r\n\r\n"
        let bytes = Array(request.utf8) + body
        let received = try await onThreadOfItsOwn { () throws -> [UInt8] in
            defer { close(fd) }
            return try exchange(bytes, on: fd, deadline: .now + .seconds(15))
        }
        return try parse(received, from: endpoint)
    }

    /// Writes `bytes` and reads until the endpoint closes (the socket is non-blocking: poll waits).
    private static func exchange(_ bytes: [UInt8], on fd: Int32, deadline: ContinuousClock.Instant) throws -> [UInt8] {
        func wait(_ events: Int32) throws {
            let left = deadline - .now
            guard left > .zero else { throw CLIError("the push endpoint did not answer within 15 s") }
            var ready = pollfd(fd: fd, events: Int16(events), revents: 0)
            _ = poll(&ready, 1, Int32(clamping: left.components.seconds * 1000 + 1))
        }
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count > 0 { sent += count; continue }
            // Refused early (e.g. 413 before the whole body): stop writing and read the answer.
            if errno == EPIPE || errno == ECONNRESET { break }
            guard errno == EAGAIN || errno == EINTR else { throw CLIError("cannot send the push: \(String(cString: strerror(errno)))") }
            try wait(POLLOUT)
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while received.count < answerLimit {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count > 0 { received += buffer[0..<count]; continue }
            if count == 0 || errno == ECONNRESET { break }
            guard errno == EAGAIN || errno == EINTR else { throw CLIError("cannot read the push endpoint's answer: \(String(cString: strerror(errno)))") }
            try wait(POLLIN)
        }
        return received
    }

    private static func parse(_ received: [UInt8], from endpoint: String) throws -> Answer {
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        guard let end = received.indices.first(where: { received[$0...].starts(with: separator) }) else {
            throw CLIError("the push endpoint at \(endpoint) closed the connection without a whole HTTP answer")
        }
        let lines = String(decoding: received[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusWords = lines[0].split(separator: " ")
        guard statusWords.count >= 2, statusWords[0].hasPrefix("HTTP/1."), let status = Int(statusWords[1]) else {
            throw CLIError("the push endpoint at \(endpoint) answered \"\(lines[0].prefix(100))\", not HTTP/1.1")
        }
        let headers = lines.dropFirst().compactMap { line -> (name: String, value: String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        var body = Array(received[(end + separator.count)...])
        if let length = headers.first(where: { $0.name.lowercased() == "content-length" }).flatMap({ Int($0.value) }), length < body.count {
            body = Array(body.prefix(length))
        }
        return Answer(status: status, headers: headers, body: body)
    }
}
