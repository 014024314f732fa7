import Glibc

/// A blocking HTTP/1.1 client on loopback for the tests: sends raw bytes (so malformed and
/// oversized requests can be sent as they are) and reads one answer, within a 5 s socket timeout.
struct HTTPProbe {
    struct Answer {
        var status: Int
        var head: String
        var text: String
        var closed: Bool
    }

    let fd: Int32

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw ProbeError("socket: errno \(errno)") }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard connected else {
            Glibc.close(fd)
            throw ProbeError("connect to port \(port): errno \(errno)")
        }
    }

    func close() { _ = Glibc.close(fd) }

    /// Writes `bytes` (as much as the server takes; it may close early on an oversized request).
    func send(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent <= 0 { return }
            offset += sent
        }
    }

    /// Reads one answer: its head, then Content-Length bytes of body; `closed` if the server closed after it.
    func answer() throws -> Answer {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        var closed = false
        func complete() -> (status: Int, head: String, text: String)? {
            guard let end = received.indices.dropLast(3).first(where: { received[$0..<($0 + 4)].elementsEqual("\r\n\r\n".utf8) }) else { return nil }
            let head = String(decoding: received[..<end], as: UTF8.self)
            let length = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: " ")) } ?? 0
            guard received.count >= end + 4 + length else { return nil }
            let status = head.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
            return (status, head, String(decoding: received[(end + 4)..<(end + 4 + length)], as: UTF8.self))
        }
        while complete() == nil {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count < 0 { throw ProbeError("no complete answer within 5 s: errno \(errno); got \(String(decoding: received, as: UTF8.self))") }
            if count == 0 {
                closed = true
                break
            }
            received += buffer[..<count]
        }
        guard let (status, head, text) = complete() else {
            throw ProbeError("the server closed without a complete answer; got \"\(String(decoding: received, as: UTF8.self))\"")
        }
        return Answer(status: status, head: head, text: text, closed: closed)
    }

    /// Whether the server closes the connection (read returns end of file within 5 s; data read is dropped).
    func closedByServer() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count == 0 { return true }
            if count < 0 { return errno == ECONNRESET }
        }
    }

    /// Sends a GET with the given Active-Remote (none if nil) on a new connection and reads the answer.
    static func get(_ target: String, port: Int, activeRemote: String?, extraHeaders: String = "") throws -> Answer {
        let probe = try HTTPProbe(port: port)
        defer { probe.close() }
        let remote = activeRemote.map { "Active-Remote: \($0)\r\n" } ?? ""
        probe.send(Array("GET \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\(remote)\(extraHeaders)\r\n".utf8))
        return try probe.answer()
    }
}

struct ProbeError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension Substring {
    func trimmingCharacters(in set: Character) -> String {
        String(drop { $0 == set }.reversed().drop { $0 == set }.reversed())
    }
}
