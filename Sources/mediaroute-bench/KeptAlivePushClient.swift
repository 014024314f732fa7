import Foundation
import Glibc
import MediaRouteIPC

/// An app server's connection to the push endpoint: HTTP/1.1 POSTs shaped like APNs's, one after
/// another on one kept-alive TCP connection, written and read by hand with blocking calls on the
/// thread that measures (the endpoint is our code under test; nothing of ours is on this side).
final class KeptAlivePushClient: @unchecked Sendable {  // made in a task, then used by the measuring thread alone
    struct Push {
        /// The whole request, ready to be written at once.
        let bytes: [UInt8]
    }

    private let fd: Int32
    private let endpoint: String
    private let application: String
    private let credential: String
    private var received: [UInt8] = []

    /// Connects to the endpoint at `address` for `application`'s pushes, sent with `credential`.
    static func connect(to address: String, application: String, credential: String) async throws -> KeptAlivePushClient {
        guard let colon = address.lastIndex(of: ":"), let port = UInt16(address[address.index(after: colon)...]) else {
            throw BenchmarkError("the push endpoint's address \"\(address)\" is not HOST:PORT")
        }
        let fd = try await TCPSocket.connect(host: String(address[..<colon]), port: port, timeout: .seconds(5))
        // Blocking from here on, with a bound: an answer that never comes fails the run.
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        var bound = timeval(tv_sec: 10, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &bound, socklen_t(MemoryLayout<timeval>.size))
        return KeptAlivePushClient(fd: fd, endpoint: address, application: application, credential: credential)
    }

    private init(fd: Int32, endpoint: String, application: String, credential: String) {
        (self.fd, self.endpoint, self.application, self.credential) = (fd, endpoint, application, credential)
    }

    /// The request for `aps` to `token`, made before the clock starts.
    func push(_ aps: JSONValue, to token: String) -> Push {
        let body = JSONWriter.encode(["aps": aps])
        let head = "POST /3/device/\(token) HTTP/1.1\r\nhost: \(endpoint)\r\napns-topic: \(application).push-type.nowplaying\r\n"
            + "apns-push-type: nowplaying\r\nauthorization: bearer \(credential)\r\ncontent-type: application/json\r\ncontent-length: \(body.count)\r\n\r\n"
        return Push(bytes: Array(head.utf8) + body)
    }

    /// Writes the request whole; returns when the write began (monotonic nanoseconds).
    func send(_ push: Push) throws -> UInt64 {
        let started = now()
        var sent = 0
        while sent < push.bytes.count {
            let count = push.bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 || errno == EINTR else { throw BenchmarkError("cannot write the push to \(endpoint): \(String(cString: strerror(errno)))") }
            sent += max(count, 0)
        }
        return started
    }

    /// Reads one answer (its head and its `content-length` body); returns its status and body.
    func answer() throws -> (status: Int, body: String) {
        let separator = Array("\r\n\r\n".utf8)
        while true {
            if let end = received.indices.first(where: { received[$0...].starts(with: separator) }) {
                let head = String(decoding: received[..<end], as: UTF8.self).lowercased().components(separatedBy: "\r\n")
                let words = head[0].split(separator: " ")
                guard words.count >= 2, words[0].hasPrefix("http/1."), let status = Int(words[1]) else {
                    throw BenchmarkError("the push endpoint answered \"\(head[0].prefix(80))\", not HTTP/1.1")
                }
                let length = head.dropFirst().compactMap { $0.hasPrefix("content-length:") ? Int($0.dropFirst(15).trimmingCharacters(in: .whitespaces)) : nil }.first ?? 0
                if received.count >= end + 4 + length {
                    let body = String(decoding: received[(end + 4)..<(end + 4 + length)], as: UTF8.self)
                    received.removeFirst(end + 4 + length)
                    return (status, body)
                }
            }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = recv(fd, &buffer, buffer.count, 0)
            if count > 0 {
                received += buffer[0..<count]
            } else if count == 0 {
                throw BenchmarkError("the push endpoint closed the kept-alive connection")
            } else if errno != EINTR {
                throw BenchmarkError("no answer from the push endpoint: \(String(cString: strerror(errno)))")
            }
        }
    }

    func close() { Glibc.close(fd) }
}
