import Foundation
import Glibc
import MediaRouteIPC
import NIOHTTP1
import Synchronization
import Testing
import TestSupport
import UPnP

@Suite("HTTPServer with curl and raw sockets as clients", .timeLimit(.minutes(1)))
struct HTTPServerTests {
    @Test func keepsTheConnectionAliveWhenAskedAndClosesItOtherwise() async throws {
        try await withTemporaryDirectory { directory in
            try await withHTTPServer({ request in .text(.ok, "you asked for \(request.path)") }) { server in
                let base = "http://127.0.0.1:\(server.port)"
                let both = try await curl(["\(base)/one", "-o", "/dev/null", "\(base)/two%20three"], in: directory, write: "%{num_connects} ")
                #expect(both.written == "1 0 ", "the second request reuses the first one's connection")
                #expect(both.body == Array("you asked for /one\n".utf8))

                let old = try await curl(["--http1.0", "\(base)/two%20three"], in: directory)
                #expect(old.status == 200)
                #expect(old.headers["connection"] == "close")
                #expect(old.body == Array("you asked for /two three\n".utf8))

                let fd = try connectedSocket(to: server.port)
                defer { close(fd) }
                let head = String(decoding: try await exchange(Array("HEAD /head HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8), on: fd), as: UTF8.self)
                #expect(head.hasPrefix("HTTP/1.1 200 OK\r\n"))
                #expect(head.contains("\r\nContent-Length: 20\r\n"))
                #expect(head.hasSuffix("\r\n\r\n"), "no body after the head: \(head)")
            }
        }
    }

    @Test func genaRequestsReachTheHandlerWithTheirHeaders() async throws {
        let seen = EventLog<HTTPServer.Request>()
        try await withTemporaryDirectory { directory in
            try await withHTTPServer({ request in
                seen.append(request)
                return HTTPServer.Response(status: .ok, headers: ["SID": "uuid:s-1"])
            }) { server in
                let property = "<e:propertyset xmlns:e=\"urn:schemas-upnp-org:event-1-0\"><e:property><LastChange>x</LastChange></e:property></e:propertyset>"
                let notify = try await curl(["-X", "NOTIFY", "-H", "NT: upnp:event", "-H", "NTS: upnp:propchange", "-H", "SID: uuid:s-1", "-H", "SEQ: 0",
                                             "-H", "Content-Type: text/xml; charset=\"utf-8\"", "--data-binary", property,
                                             "http://127.0.0.1:\(server.port)/gena/renderer-1"], in: directory)
                #expect(notify.status == 200)
                let subscribe = try await curl(["-X", "SUBSCRIBE", "-H", "CALLBACK: <http://127.0.0.1:1/x>", "-H", "NT: upnp:event",
                                                "http://127.0.0.1:\(server.port)/events"], in: directory)
                #expect(subscribe.headers["sid"] == "uuid:s-1")

                let requests = seen.all
                try #require(requests.count == 2)
                #expect(requests[0].method.rawValue == "NOTIFY")
                #expect(requests[0].path == "/gena/renderer-1")
                #expect(requests[0].headers.first(name: "nts") == "upnp:propchange")
                #expect(requests[0].headers.first(name: "seq") == "0")
                #expect(requests[0].body == Array(property.utf8))
                #expect(requests[0].remoteAddress == "127.0.0.1")
                #expect(requests[1].method.rawValue == "SUBSCRIBE")
                #expect(requests[1].headers.first(name: "callback") == "<http://127.0.0.1:1/x>")
            }
        }
    }

    @Test func refusesBodiesOverTheLimitWith413() async throws {
        let handled = EventLog<Int>()
        try await withTemporaryDirectory { directory in
            try await withHTTPServer(maximumRequestBody: 1024, { request in
                handled.append(request.body.count)
                return .text(.ok, "fine")
            }) { server in
                let url = "http://127.0.0.1:\(server.port)/gena"
                let big = String(repeating: "x", count: 4096)
                let declared = try await curl(["--data-binary", big, url], in: directory)
                #expect(declared.status == 413)
                #expect(String(decoding: declared.body, as: UTF8.self) == "The request body is longer than the limit of 1024 bytes.\n")
                let chunked = try await curl(["-H", "Transfer-Encoding: chunked", "--data-binary", big, url], in: directory)
                #expect(chunked.status == 413)
                let small = try await curl(["--data-binary", String(repeating: "y", count: 1024), url], in: directory)
                #expect(small.status == 200)
                #expect(handled.all == [1024])
            }
        }
    }

    @Test func answersAMalformedRequestWith400() async throws {
        try await withHTTPServer({ _ in .text(.ok, "fine") }) { server in
            let fd = try connectedSocket(to: server.port)
            defer { close(fd) }
            let answer = String(decoding: try await exchange(Array("NOT A REQUEST\u{1}\r\n\r\n".utf8), on: fd), as: UTF8.self)
            #expect(answer.hasPrefix("HTTP/1.1 400 Bad Request\r\n"), "\(answer)")
        }
    }

    @Test func servesAStreamWithOrWithoutALength() async throws {
        let chunks: [[UInt8]] = [Array("first ".utf8), [], Array("second ".utf8), Array("third".utf8)]
        try await withTemporaryDirectory { directory in
            try await withHTTPServer({ request in
                let stream = AsyncThrowingStream<[UInt8], any Error> { continuation in
                    chunks.forEach { continuation.yield($0) }
                    continuation.finish()
                }
                return HTTPServer.Response(status: .ok, body: .stream(length: request.path == "/sized" ? 18 : nil, stream))
            }) { server in
                let chunked = try await curl(["http://127.0.0.1:\(server.port)/unsized"], in: directory)
                #expect(chunked.headers["transfer-encoding"] == "chunked")
                #expect(chunked.body == Array("first second third".utf8))
                let sized = try await curl(["http://127.0.0.1:\(server.port)/sized"], in: directory)
                #expect(sized.headers["content-length"] == "18")
                #expect(sized.headers["transfer-encoding"] == nil)
                #expect(sized.body == Array("first second third".utf8))
                let old = try await curl(["--http1.0", "http://127.0.0.1:\(server.port)/unsized"], in: directory)
                #expect(old.headers["connection"] == "close")
                #expect(old.headers["transfer-encoding"] == nil)
                #expect(old.body == Array("first second third".utf8))
            }
        }
    }

    @Test func pullsAStreamOnlyAsFastAsTheClientReadsAndStopsWhenItLeaves() async throws {
        let source = PulledSource()
        // Kernel buffers of a fixed size on both sides: grown by the kernel, they took megabytes
        // before they were full, which a server starved of CPU by the tests beside this one
        // (~60 KB/s) did not pull within the wait.
        try await withHTTPServer(sendBufferSize: 64 << 10, { _ in HTTPServer.Response(status: .ok, body: .stream(length: nil, source.stream())) }) { server in
            let fd = try connectedSocket(to: server.port, receiveBuffer: 64 << 10)
            var open = true
            defer { if open { close(fd) } }
            _ = Array("GET /live HTTP/1.1\r\nHost: x\r\n\r\n".utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            // The client reads nothing: once the socket buffers are full, pulling must stop.
            try await waitUntil("the stream stops being pulled", seconds: 15) {
                let before = source.pulledBytes
                try? await Task.sleep(for: .milliseconds(300))
                return before > 0 && source.pulledBytes == before
            }
            let stalled = source.pulledBytes
            #expect(stalled < 32 << 20, "pulled \(stalled) bytes for a client that reads nothing")
            print("HTTPServer: a stream for a client that reads nothing stops after \(stalled >> 10) KiB pulled")
            // Twice what the buffers held: the server must pull again to send it all.
            let read = try await readSome(fd, bytes: 512 << 10)
            #expect(read == 512 << 10)
            try await waitUntil("pulling resumes once the client reads") { source.pulledBytes > stalled }
            close(fd)
            open = false
            try await waitUntil("the stream is released once the client left", seconds: 10) { source.released }
        }
    }

    @Test func closingTheServerEndsTheStreamsItServes() async throws {
        let producer = PacedProducer()
        let server = try await HTTPServer.start(host: "127.0.0.1") { _ in HTTPServer.Response(status: .ok, body: .stream(length: nil, producer.stream())) }
        let fd: Int32
        do {
            fd = try connectedSocket(to: server.port)
        } catch {
            await server.close()
            throw error
        }
        defer { close(fd) }
        _ = Array("GET /live HTTP/1.1\r\nHost: x\r\n\r\n".utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        let started = try await readSome(fd, bytes: 1000)
        await server.close()
        #expect(started == 1000)
        try await waitUntil("the producer sees its stream end", seconds: 5) { producer.terminated }
        _ = try await readUntilClosed(fd, seconds: 5)
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        var byte: UInt8 = 0
        #expect(poll(&poller, 1, 0) == 1 && recv(fd, &byte, 1, 0) == 0, "the connection is closed")
    }
}

/// Reads up to `bytes` from `fd` within 10 s, on a thread of its own (see `readUntilClosed`);
/// returns how many came.
func readSome(_ fd: Int32, bytes: Int) async throws -> Int {
    try await onThreadOfItsOwn { readSomeBlocking(fd, bytes: bytes) }
}

private func readSomeBlocking(_ fd: Int32, bytes: Int) -> Int {
    let deadline = ContinuousClock.now + .seconds(10)
    var total = 0
    var buffer = [UInt8](repeating: 0, count: 65536)
    while total < bytes && ContinuousClock.now < deadline {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, 50) >= 0 else { break }
        if poller.revents == 0 { continue }
        let n = recv(fd, &buffer, min(buffer.count, bytes - total), 0)
        if n <= 0 { break }
        total += n
    }
    return total
}

/// An endless stream made only when pulled (one 64 KiB chunk per pull), counting what was pulled
/// and noting when the server let go of it.
final class PulledSource: Sendable {
    private let pulled = Atomic<Int>(0)
    private let releasedFlag = Atomic<Bool>(false)
    var pulledBytes: Int { pulled.load(ordering: .relaxed) }
    var released: Bool { releasedFlag.load(ordering: .relaxed) }

    /// Dropped with the stream's closure: the stream is gone.
    private final class Lifetime: Sendable {
        let source: PulledSource
        init(_ source: PulledSource) { self.source = source }
        deinit { source.releasedFlag.store(true, ordering: .relaxed) }
    }

    func stream() -> AsyncThrowingStream<[UInt8], any Error> {
        let lifetime = Lifetime(self)
        return AsyncThrowingStream(unfolding: {
            lifetime.source.pulled.add(64 << 10, ordering: .relaxed)
            return [UInt8](repeating: 0x55, count: 64 << 10)
        })
    }
}

/// An endless stream pushed by a task of its own, about 16 MB/s, as a live source would: its
/// `onTermination` says when the consumer went away.
final class PacedProducer: Sendable {
    private let terminatedFlag = Atomic<Bool>(false)
    private let produced = Atomic<Int>(0)
    var terminated: Bool { terminatedFlag.load(ordering: .relaxed) }
    var producedBytes: Int { produced.load(ordering: .relaxed) }

    func stream() -> AsyncThrowingStream<[UInt8], any Error> {
        AsyncThrowingStream(bufferingPolicy: .bufferingNewest(8)) { continuation in
            let task = Task {
                while !Task.isCancelled {
                    continuation.yield([UInt8](repeating: 0x33, count: 16 << 10))
                    self.produced.add(16 << 10, ordering: .relaxed)
                    try? await Task.sleep(for: .milliseconds(1))  // pacing a live source, not waiting for anything
                }
            }
            continuation.onTermination = { _ in
                task.cancel()
                self.terminatedFlag.store(true, ordering: .relaxed)
            }
        }
    }
}
