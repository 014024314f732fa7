import Foundation
import Glibc
import MediaRouteIPC
import Synchronization
import Testing
import UPnP

// Peers for the HTTP tests: real curl and python3 as clients and servers, bare sockets for peers no
// HTTP library would be. Everything on loopback, everything stopped and removed by the helper that
// made it, whatever the test body throws.

/// What curl saw: the final status and headers (names lowercased), the body, and curl's -w output.
struct CurlResult {
    var status: Int
    var headers: [String: String]
    var body: [UInt8]
    var written: String
}

/// Runs `/usr/bin/curl` (at most `seconds`) with `arguments`; the body goes to a file in `directory`
/// and is read back, or to /dev/null when `keepBody` is false (large downloads).
func curl(_ arguments: [String], in directory: String, write: String = "", keepBody: Bool = true, seconds: Int = 20) async throws -> CurlResult {
    let bodyPath = directory + "/curl-body-\(UUID().uuidString)"
    let headersPath = directory + "/curl-headers-\(UUID().uuidString)"
    defer {
        unlink(bodyPath)
        unlink(headersPath)
    }
    let output = try await ChildOutput.run("/usr/bin/curl", ["-sS", "--max-time", String(seconds), "-D", headersPath, "-o", keepBody ? bodyPath : "/dev/null", "-w", write] + arguments,
                                           timeout: .seconds(seconds + 10))
    try #require(output.termination == .exited(0), "curl \(arguments): \(output.termination): \(output.standardError)")
    let headerText = (try? String(contentsOfFile: headersPath, encoding: .utf8)) ?? ""
    // The last block is the final answer (a 100 Continue may come before it).
    let block = headerText.components(separatedBy: "\r\n\r\n").filter { !$0.isEmpty }.last ?? ""
    var lines = block.components(separatedBy: "\r\n")
    let statusLine = lines.isEmpty ? "" : lines.removeFirst()
    let status = statusLine.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
    var headers: [String: String] = [:]
    for line in lines {
        guard let colon = line.firstIndex(of: ":") else { continue }
        headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
    }
    let body = FileManager.default.contents(atPath: bodyPath).map { [UInt8]($0) } ?? []
    return CurlResult(status: status, headers: headers, body: body, written: output.standardOutput)
}

/// A fresh directory under /tmp, removed after `body`.
func withTemporaryDirectory<T>(_ body: (String) async throws -> T) async throws -> T {
    let path = NSTemporaryDirectory() + "/dlna-http-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try await body(path)
}

/// An `HTTPServer` on 127.0.0.1, closed after `body`.
func withHTTPServer<T>(maximumRequestBody: Int = 256 << 10, sendBufferSize: Int32? = nil, _ handler: @escaping HTTPServer.Handler,
                       _ body: (HTTPServer) async throws -> T) async throws -> T {
    let server = try await HTTPServer.start(host: "127.0.0.1", maximumRequestBody: maximumRequestBody, sendBufferSize: sendBufferSize, handler: handler)
    do {
        let result = try await body(server)
        await server.close()
        return result
    } catch {
        await server.close()
        throw error
    }
}

/// A listening TCP socket on 127.0.0.1 that nobody accepts from: the kernel completes connections
/// to it, and nothing ever answers.
func withSilentListener<T>(_ body: (Int) async throws -> T) async throws -> T {
    let (fd, port) = try listeningSocket()
    defer { close(fd) }
    return try await body(port)
}

func listeningSocket() throws -> (Int32, Int) { try boundSocket(listening: true) }

/// A TCP socket bound to a free port of 127.0.0.1, listening or not, and its port.
func boundSocket(listening: Bool = false) throws -> (Int32, Int) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    try #require(fd >= 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && (!listening || listen(fd, 16) == 0) && getsockname(fd, $0, &length) == 0 }
    }
    if !bound { close(fd) }
    try #require(bound, "bind/listen on 127.0.0.1: \(String(cString: strerror(errno)))")
    return (fd, Int(UInt16(bigEndian: address.sin_port)))
}

/// Whether a connection waits in `listener`'s queue.
func hasPendingConnection(_ listener: Int32) -> Bool {
    var poller = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
    return poll(&poller, 1, 0) == 1
}

/// The next connection to `listener`, accepted within `seconds` on a thread of its own.
func acceptConnection(_ listener: Int32, seconds: Int32 = 20) async throws -> Int32 {
    let fd = try await onThreadOfItsOwn { () -> Int32 in
        var poller = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, seconds * 1000) == 1 else { return -1 }
        let fd = accept(listener, nil, nil)
        if fd >= 0 { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return fd
    }
    try #require(fd >= 0, "no connection came within \(seconds) s")
    return fd
}

/// Reads one request from `fd` (its head, then as much body as its Content-Length says, within
/// 20 s: the suite's first seconds are slow), answers it 200 with `body` and closes the sending
/// side; returns the request as text.
func answerOneRequest(on fd: Int32, with body: String) async throws -> String {
    let request = try await onThreadOfItsOwn {
        readBlocking(fd, seconds: 20) { received in
            let text = String(decoding: received, as: UTF8.self)
            guard let end = text.range(of: "\r\n\r\n") else { return false }
            let length = text[..<end.lowerBound].split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
            return text[end.upperBound...].utf8.count >= length
        }
    }
    let answer = Array("HTTP/1.1 200 OK\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)".utf8)
    _ = answer.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    shutdown(fd, Int32(SHUT_WR))
    return String(decoding: request, as: UTF8.self)
}

/// A connected TCP socket to 127.0.0.1:`port`, for a client that misbehaves on purpose; with
/// `receiveBuffer`, the kernel's receive buffer fixed at that size before it connects.
func connectedSocket(to port: Int, receiveBuffer: Int32? = nil) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    try #require(fd >= 0)
    if var size = receiveBuffer {
        try #require(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) == 0)
    }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
    }
    if !connected { close(fd) }
    try #require(connected, "connect to 127.0.0.1:\(port): \(String(cString: strerror(errno)))")
    return fd
}

/// Writes `bytes` on `fd`, then reads until the peer closes or `seconds` pass.
func exchange(_ bytes: [UInt8], on fd: Int32, seconds: Double = 5) async throws -> [UInt8] {
    _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    return try await readUntilClosed(fd, seconds: seconds)
}

/// Reads until the peer closes or `seconds` pass, on a thread of its own: waiting on the
/// cooperative pool's (two on a 2-CPU machine) stalled the tests beside it, and the server under
/// test when its stream is produced by a task.
func readUntilClosed(_ fd: Int32, seconds: Double) async throws -> [UInt8] {
    try await onThreadOfItsOwn { readUntilClosedBlocking(fd, seconds: seconds) }
}

private func readUntilClosedBlocking(_ fd: Int32, seconds: Double) -> [UInt8] {
    readBlocking(fd, seconds: seconds) { _ in false }
}

/// Reads until `isComplete` says so, the peer closes, or `seconds` pass.
private func readBlocking(_ fd: Int32, seconds: Double, until isComplete: ([UInt8]) -> Bool) -> [UInt8] {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    var received: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while !isComplete(received) && ContinuousClock.now < deadline {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, 50) >= 0 else { break }
        if poller.revents == 0 { continue }
        let n = recv(fd, &buffer, buffer.count, 0)
        if n <= 0 { break }
        received += buffer[0..<n]
    }
    return received
}

/// A TCP peer on 127.0.0.1 that reads each request head and answers it with `reply` as is (no
/// HTTP library would write garbage), on a thread of its own that `stop` ends and waits for.
final class RawReplyPeer: Sendable {
    let port: Int
    private let listener: Int32
    private let stopping = Atomic<Bool>(false)
    private let exited: AsyncStream<Void>

    init(reply: [UInt8]) throws {
        (listener, port) = try listeningSocket()
        let (exited, exit) = AsyncStream<Void>.makeStream()
        self.exited = exited
        let listener = self.listener
        Thread.detachNewThread { [self] in
            while !stopping.load(ordering: .relaxed) {
                var poller = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
                guard poll(&poller, 1, 50) > 0 else { continue }
                let client = accept(listener, nil, nil)
                guard client >= 0 else { continue }
                var head: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 4096)
                while !head.ends(with: Array("\r\n\r\n".utf8)) {
                    var clientPoller = pollfd(fd: client, events: Int16(POLLIN), revents: 0)
                    // Long enough for a client on a loaded machine: answering before the request
                    // is in would make the client's write fail instead of its read.
                    guard poll(&clientPoller, 1, 15_000) > 0 else { break }
                    let n = recv(client, &buffer, buffer.count, 0)
                    if n <= 0 { break }
                    head += buffer[0..<n]
                }
                _ = reply.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                close(client)
            }
            exit.finish()
        }
    }

    func stop() async {
        stopping.store(true, ordering: .relaxed)
        for await _ in exited {}
        close(listener)
    }
}

extension Array where Element: Equatable {
    func ends(with suffix: [Element]) -> Bool { count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix }
}

/// The process's peak resident memory so far (VmHWM), in bytes.
/// Sets the peak (VmHWM) to the resident size now, so that a later peak is this test's.
func resetPeakResidentBytes() {
    _ = try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
}

func peakResidentBytes() -> Int64 {
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") } ?? ""
    return (line.split(separator: " ").dropFirst().first.flatMap { Int64($0) } ?? 0) * 1024
}
