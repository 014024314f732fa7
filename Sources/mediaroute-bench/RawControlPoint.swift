import Foundation
import Glibc

/// A UPnP control point in plain blocking sockets, no library: the floor the DLNA benchmarks
/// compare against (what any control point must send and wait for, and nothing else).
enum RawControlPoint {
    /// Sends `M-SEARCH` for MediaRenderer:1 from `local` and returns the first LOCATION answered.
    static func search(from local: String, timeout seconds: Int = 3) throws -> String {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw BenchmarkError("socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var address = try socketAddress(local, port: 0)
        guard withUnsafePointer(to: &address, { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }) == 0 else {
            throw BenchmarkError("bind \(local): \(String(cString: strerror(errno)))")
        }
        var wait = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        let message = Array("M-SEARCH * HTTP/1.1\r\nHOST: 239.255.255.250:1900\r\nMAN: \"ssdp:discover\"\r\nMX: 1\r\nST: urn:schemas-upnp-org:device:MediaRenderer:1\r\n\r\n".utf8)
        var group = try socketAddress("239.255.255.250", port: 1900)
        let sent = withUnsafePointer(to: &group) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, message, message.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard sent == message.count else { throw BenchmarkError("sendto: \(String(cString: strerror(errno)))") }
        var buffer = [UInt8](repeating: 0, count: 8192)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            guard count > 0 else { throw BenchmarkError("no renderer answered M-SEARCH within \(seconds) s") }
            let text = String(decoding: buffer[..<count], as: UTF8.self)
            for line in text.split(separator: "\r\n") where line.lowercased().hasPrefix("location:") {
                return line.dropFirst("location:".count).trimmingCharacters(in: .whitespaces)
            }
        }
    }

    /// One HTTP/1.0 exchange (the server closes after answering); returns the status line's code and the body.
    static func http(_ method: String, _ url: String, headers: [String] = [], body: String = "") throws -> (status: Int, body: String) {
        guard let parsed = URL(string: url), let host = parsed.host, let port = parsed.port else { throw BenchmarkError("bad URL \(url)") }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BenchmarkError("socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var address = try socketAddress(host, port: port)
        guard withUnsafePointer(to: &address, { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }) == 0 else {
            throw BenchmarkError("connect \(host):\(port): \(String(cString: strerror(errno)))")
        }
        let request = Array(([
            "\(method) \(parsed.path.isEmpty ? "/" : parsed.path) HTTP/1.0", "Host: \(host):\(port)", "Content-Length: \(body.utf8.count)", "Connection: close",
        ] + headers).joined(separator: "\r\n").utf8) + Array("\r\n\r\n\(body)".utf8)
        var offset = 0
        while offset < request.count {
            let written = request[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { throw BenchmarkError("send: \(String(cString: strerror(errno)))") }
            offset += written
        }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16384)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count <= 0 { break }
            answer += buffer[..<count]
        }
        let text = String(decoding: answer, as: UTF8.self)
        guard let headEnd = text.range(of: "\r\n\r\n"), let code = text.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else {
            throw BenchmarkError("\(method) \(url): not an HTTP answer")
        }
        return (code, String(text[headEnd.upperBound...]))
    }

    /// One SOAP action; throws unless the renderer answers 200.
    @discardableResult
    static func soap(_ controlURL: String, service: String, _ action: String, _ arguments: String) throws -> String {
        let type = "urn:schemas-upnp-org:service:\(service):1"
        let body = "<?xml version=\"1.0\"?><s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\" s:encodingStyle=\"http://schemas.xmlsoap.org/soap/encoding/\"><s:Body><u:\(action) xmlns:u=\"\(type)\">\(arguments)</u:\(action)></s:Body></s:Envelope>"
        let answer = try http("POST", controlURL, headers: ["Content-Type: text/xml; charset=\"utf-8\"", "SOAPACTION: \"\(type)#\(action)\""], body: body)
        guard answer.status == 200 else { throw BenchmarkError("\(action) answered HTTP \(answer.status): \(answer.body)") }
        return answer.body
    }

    /// Asks the renderer's transport state until it is STOPPED (at most 10 s).
    static func waitUntilStopped(_ controlURL: String) throws {
        let start = now()
        while !(try soap(controlURL, service: "AVTransport", "GetTransportInfo", "<InstanceID>0</InstanceID>")).contains(">STOPPED<") {
            guard now() - start < 10_000_000_000 else { throw BenchmarkError("the renderer did not stop within 10 s") }
        }
    }

    private static func socketAddress(_ host: String, port: Int) throws -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { throw BenchmarkError("not an IPv4 address: \(host)") }
        return address
    }
}
