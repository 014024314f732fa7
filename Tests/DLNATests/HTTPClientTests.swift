import Foundation
import Glibc
import MediaRouteIPC
import NIOCore
import NIOHTTP1
import Testing
import TestSupport
@testable import UPnP

@Suite("HTTPClient against python3's http.server, our server and broken peers", .timeLimit(.minutes(1)))
struct HTTPClientTests {
    let client = HTTPClient()
    /// For requests whose answers a test serves by hand, step by step: in the suite's first
    /// seconds (a hundred tests starting on two cores) those steps once took longer than the
    /// default 5 s, and what these tests check is where requests go, not how fast.
    static let roomy: Duration = .seconds(30)

    @Test func fetchesFromPythonHTTPServer() async throws {
        try await withTemporaryDirectory { directory in
            let content = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 * 7) }
            try Data(content).write(to: URL(fileURLWithPath: directory + "/description.xml"))
            try await withPythonHTTPServer(serving: directory) { port in
                let url = try #require(URL(string: "http://127.0.0.1:\(port)/description.xml"))
                let got = try await client.send(.GET, url)
                #expect(got.status == .ok)
                #expect(got.body == content)
                #expect(got.headers.first(name: "content-length") == "100000")

                let head = try await client.send(.HEAD, url)
                #expect(head.status == .ok)
                #expect(head.body.isEmpty)
                #expect(head.headers.first(name: "content-length") == "100000")

                let missing = try await client.send(.GET, try #require(URL(string: "http://127.0.0.1:\(port)/nothing.xml")))
                #expect(missing.status == .notFound)
            }
        }
    }

    @Test func postsABodyAndCustomMethodsWithTheirHeaders() async throws {
        let seen = EventLog<HTTPServer.Request>()
        try await withHTTPServer({ request in
            seen.append(request)
            if request.method.rawValue == "SUBSCRIBE" {
                return HTTPServer.Response(status: .ok, headers: ["SID": "uuid:subscription-1", "TIMEOUT": "Second-300"])
            }
            return HTTPServer.Response(status: .ok, headers: ["Content-Type": "text/xml"], body: .bytes(request.body.reversed()))
        }) { server in
            let soap = Array("<s:Envelope>Play</s:Envelope>".utf8)
            let control = try #require(URL(string: "http://127.0.0.1:\(server.port)/AVTransport/control?x=1%202"))
            let answer = try await client.send(.POST, control, headers: ["SOAPACTION": "\"urn:schemas-upnp-org:service:AVTransport:1#Play\""], body: soap)
            #expect(answer.status == .ok)
            #expect(answer.body == soap.reversed())
            #expect(answer.headers.first(name: "content-type") == "text/xml")

            let events = try #require(URL(string: "http://127.0.0.1:\(server.port)/AVTransport/event"))
            let subscribed = try await client.send(.RAW(value: "SUBSCRIBE"), events, headers: [
                "CALLBACK": "<http://127.0.0.1:4000/gena/1>", "NT": "upnp:event", "TIMEOUT": "Second-300",
            ])
            #expect(subscribed.status == .ok)
            #expect(subscribed.headers.first(name: "sid") == "uuid:subscription-1")

            let requests = seen.all
            try #require(requests.count == 2)
            #expect(requests[0].method == .POST)
            #expect(requests[0].uri == "/AVTransport/control?x=1%202")
            #expect(requests[0].path == "/AVTransport/control")
            #expect(requests[0].headers.first(name: "soapaction") == "\"urn:schemas-upnp-org:service:AVTransport:1#Play\"")
            #expect(requests[0].headers.first(name: "host") == "127.0.0.1:\(server.port)")
            #expect(requests[0].remoteAddress == "127.0.0.1")
            // NIO parses SUBSCRIBE into its own case: compare the method's text, not the enum.
            #expect(requests[1].method.rawValue == "SUBSCRIBE")
            #expect(requests[1].headers.first(name: "callback") == "<http://127.0.0.1:4000/gena/1>")
            #expect(requests[1].headers.first(name: "nt") == "upnp:event")
            #expect(requests[1].headers.first(name: "timeout") == "Second-300")
        }
    }

    @Test func timesOutOnAServerThatNeverAnswers() async throws {
        try await withSilentListener { port in
            let url = try #require(URL(string: "http://127.0.0.1:\(port)/control"))
            let error = await #expect(throws: HTTPClientError.self) {
                try await client.send(.POST, url, body: [1, 2, 3], timeout: .milliseconds(300))
            }
            // The client's own deadline ended it (the listener would wait forever), and says so.
            #expect(error?.kind == .timedOut)
            #expect(error?.description == "POST http://127.0.0.1:\(port)/control: timed out after 300 ms without a complete response")
        }
    }

    @Test func reportsARefusedConnection() async throws {
        // Bound and not listening: connections are refused, and the port stays ours (freed, it was
        // once taken by another test's server before the request, which answered 404).
        let (fd, port) = try boundSocket()
        defer { close(fd) }
        let url = try #require(URL(string: "http://127.0.0.1:\(port)/description.xml"))
        let error = await #expect(throws: HTTPClientError.self) { try await client.send(.GET, url) }
        #expect(error?.kind == .connectionFailed)
        #expect(error?.description == "GET http://127.0.0.1:\(port)/description.xml: could not connect to 127.0.0.1:\(port): Connection refused")
    }

    @Test func rejectsAMalformedResponse() async throws {
        let peer = try RawReplyPeer(reply: Array("this is not HTTP at all\r\n\r\n".utf8))
        let url = try #require(URL(string: "http://127.0.0.1:\(peer.port)/"))
        let error = await #expect(throws: HTTPClientError.self) { try await client.send(.GET, url) }
        await peer.stop()
        #expect(error?.kind == .malformedResponse)
        #expect(error?.description.hasPrefix("GET http://127.0.0.1:\(peer.port)/: the response is not valid HTTP/1.1") == true)
    }

    @Test func rejectsAResponseCutShort() async throws {
        let peer = try RawReplyPeer(reply: Array("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this".utf8))
        let url = try #require(URL(string: "http://127.0.0.1:\(peer.port)/"))
        let error = await #expect(throws: HTTPClientError.self) { try await client.send(.GET, url) }
        await peer.stop()
        #expect(error?.kind == .malformedResponse)
    }

    @Test func refusesABodyOverTheLimit() async throws {
        try await withHTTPServer({ _ in HTTPServer.Response(status: .ok, body: .bytes([UInt8](repeating: 7, count: 3 << 20))) }) { server in
            let url = try #require(URL(string: "http://127.0.0.1:\(server.port)/big"))
            let error = await #expect(throws: HTTPClientError.self) { try await client.send(.GET, url, maximumBodyLength: 1 << 20) }
            #expect(error?.kind == .bodyTooLarge)
            #expect(error?.description == "GET http://127.0.0.1:\(server.port)/big: the response body is longer than the limit of 1048576 bytes")
            let whole = try await client.send(.GET, url, maximumBodyLength: 4 << 20)
            #expect(whole.body.count == 3 << 20)
        }
    }

    @Test func aSpareConnectsOnceTheRequestBesideItIsSentAndCarriesTheNext() async throws {
        let (listener, port) = try listeningSocket()
        defer { close(listener) }
        let loop = client.nextLoop()
        let base = "http://127.0.0.1:\(port)"
        let root = try #require(URL(string: base + "/"))
        // Fresh for long enough on a loaded machine (a second, the default, ran out in the suite).
        let spare = try #require(client.spareConnection(to: root, maximumIdle: .seconds(60)))
        defer { spare.close() }
        #expect(!hasPendingConnection(listener))
        // On loopback the connects are done by the time `response` returns: the request's, then the spare's.
        let first = client.response(.GET, try #require(URL(string: base + "/description.xml")), timeout: Self.roomy, on: loop, thenOpening: spare)
        let requestConnection = try await acceptConnection(listener)
        defer { close(requestConnection) }
        let spareConnection = try await acceptConnection(listener)
        defer { close(spareConnection) }
        #expect(try await answerOneRequest(on: requestConnection, with: "one").hasPrefix("GET /description.xml HTTP/1.1\r\n"))
        #expect(try await first.get().body == Array("one".utf8))
        let second = client.response(.POST, try #require(URL(string: base + "/control")), body: Array("play".utf8), timeout: Self.roomy, on: loop, over: spare)
        let request = try await answerOneRequest(on: spareConnection, with: "two")
        #expect(request.hasPrefix("POST /control HTTP/1.1\r\n"))
        #expect(request.hasSuffix("\r\n\r\nplay"))
        #expect(try await second.get().body == Array("two".utf8))
        #expect(!hasPendingConnection(listener))
    }

    @Test func aSpareCarriesOneRequestAndNoneOnceIdleTooLong() async throws {
        let (listener, port) = try listeningSocket()
        defer { close(listener) }
        let loop = client.nextLoop()
        let base = "http://127.0.0.1:\(port)"
        let (root, description) = (try #require(URL(string: base + "/")), try #require(URL(string: base + "/d")))
        let (first, second) = (try #require(URL(string: base + "/a")), try #require(URL(string: base + "/b")))
        // Two requests handed one spare at once (a guessed and a parsed control URL): the first
        // goes over it, the second over a connection of its own.
        let spare = try #require(client.spareConnection(to: root, maximumIdle: .seconds(60)))
        defer { spare.close() }
        let fetched = client.response(.GET, description, timeout: Self.roomy, on: loop, thenOpening: spare)
        let descriptionConnection = try await acceptConnection(listener)
        defer { close(descriptionConnection) }
        let spareConnection = try await acceptConnection(listener)
        defer { close(spareConnection) }
        _ = try await answerOneRequest(on: descriptionConnection, with: "d")
        _ = try await fetched.get()
        let (a, b) = (client.response(.POST, first, timeout: Self.roomy, on: loop, over: spare), client.response(.POST, second, timeout: Self.roomy, on: loop, over: spare))
        let ownConnection = try await acceptConnection(listener)
        defer { close(ownConnection) }
        #expect(try await answerOneRequest(on: spareConnection, with: "a").hasPrefix("POST /a HTTP/1.1\r\n"))
        #expect(try await answerOneRequest(on: ownConnection, with: "b").hasPrefix("POST /b HTTP/1.1\r\n"))
        #expect(try await a.get().body == Array("a".utf8))
        #expect(try await b.get().body == Array("b".utf8))
        // A spare idle longer than it may be carries nothing; the request goes on its own, and
        // the spare, closed, says nothing and ends.
        let stale = try #require(client.spareConnection(to: root, maximumIdle: .zero))
        let again = client.response(.GET, description, timeout: Self.roomy, on: loop, thenOpening: stale)
        let againConnection = try await acceptConnection(listener)
        defer { close(againConnection) }
        let staleConnection = try await acceptConnection(listener)
        defer { close(staleConnection) }
        _ = try await answerOneRequest(on: againConnection, with: "d")
        _ = try await again.get()
        let late = client.response(.POST, first, timeout: Self.roomy, on: loop, over: stale)
        let lateConnection = try await acceptConnection(listener)
        defer { close(lateConnection) }
        #expect(try await answerOneRequest(on: lateConnection, with: "a").hasPrefix("POST /a HTTP/1.1\r\n"))
        #expect(try await late.get().body == Array("a".utf8))
        stale.close()
        #expect(try await readUntilClosed(staleConnection, seconds: 5).isEmpty)
    }

    @Test func aSpareClosedUnopenedNeverConnects() async throws {
        let (fd, port) = try listeningSocket()
        defer { close(fd) }
        let root = try #require(URL(string: "http://127.0.0.1:\(port)/"))
        let spare = try #require(client.spareConnection(to: root))
        spare.close()
        spare.open()
        // Nothing reached the listener: its queue of connections is empty.
        #expect(!hasPendingConnection(fd))
        spare.close()
    }

    @Test func aRequestWhoseConnectIsUnderWayGoesOutOnceItIsUp() async throws {
        // A listener whose queue is full drops the next SYN; the client's connect is still under
        // way when its request is made (NIO takes the socket over as it is and sends once it is
        // up), and the kernel sends the SYN again a second later, once the queue has room.
        let (listener, port, filler) = try fullQueue()
        defer { close(listener); close(filler) }
        let url = try #require(URL(string: "http://127.0.0.1:\(port)/control"))
        // The SYN is sent (and dropped) by the time `response` returns.
        let answer = client.response(.POST, url, body: Array("under way".utf8), timeout: Self.roomy, on: client.nextLoop())
        close(try await acceptConnection(listener))
        let connection = try await acceptConnection(listener)
        defer { close(connection) }
        let request = try await answerOneRequest(on: connection, with: "up")
        #expect(request.hasPrefix("POST /control HTTP/1.1\r\n"))
        #expect(request.hasSuffix("\r\n\r\nunder way"))
        #expect(try await answer.get().body == Array("up".utf8))
        // Sent once: nothing follows the request before the client closes.
        #expect(try await readUntilClosed(connection, seconds: 5).isEmpty)
    }

    @Test func aConnectRefusedAfterNIOTookTheSocketSaysSo() async throws {
        let (listener, port, filler) = try fullQueue()
        defer { close(listener); close(filler) }
        let url = try #require(URL(string: "http://127.0.0.1:\(port)/description.xml"))
        let answer = client.response(.GET, url, timeout: Self.roomy, on: client.nextLoop())
        // No longer listening (the port stays ours): the SYN sent again a second later is refused.
        try #require(shutdown(listener, Int32(SHUT_RDWR)) == 0)
        let error = await #expect(throws: HTTPClientError.self) { try await answer.get() }
        #expect(error?.kind == .connectionFailed)
        #expect(error?.description == "GET \(url.absoluteString): could not connect to 127.0.0.1:\(port): Connection refused")
    }

    /// A listener whose queue (of one) is full, the connection filling it, and its port: the
    /// kernel drops the next SYN and the client's connect is still under way when its request is
    /// to be sent (checked: the tests using it would otherwise not take the path they name).
    private func fullQueue() throws -> (listener: Int32, port: Int, filler: Int32) {
        let (listener, port) = try boundSocket()
        guard listen(listener, 0) == 0, let filler = try? connectedSocket(to: port) else {
            close(listener)
            throw HTTPClientError(.connectionFailed, "LISTEN 127.0.0.1:\(port)", "could not fill the listener's queue")
        }
        var heldUp = false
        if case .opened(let probe) = DirectTCPSocket.open(to: try SocketAddress(ipAddress: "127.0.0.1", port: port)), case .connecting = probe.send([1]) {
            heldUp = true
        }
        guard heldUp else {
            close(listener)
            close(filler)
            throw HTTPClientError(.connectionFailed, "CONNECT 127.0.0.1:\(port)", "a connect to a full queue was not held up")
        }
        return (listener, port, filler)
    }

    @Test func refusesAHeaderThatWouldEndTheHeadEarly() async throws {
        let url = try #require(URL(string: "http://127.0.0.1:9/control"))
        let error = await #expect(throws: HTTPClientError.self) {
            try await client.send(.POST, url, headers: ["SOAPACTION": "\"x\"\r\nContent-Length: 0\r\n\r\nGET /other HTTP/1.1"])
        }
        #expect(error?.kind == .invalidHeader)
        #expect(error?.description == "POST http://127.0.0.1:9/control: the header \"SOAPACTION\" cannot be sent: a name must be a token, and a value hold no control character but tabs")
    }

    @Test(arguments: ["https://127.0.0.1/x", "ftp://127.0.0.1/x", "file:///tmp/x", "http:///only/a/path", "/relative"])
    func refusesURLsItCannotFetch(_ text: String) async throws {
        let url = try #require(URL(string: text))
        let error = await #expect(throws: HTTPClientError.self) { try await client.send(.GET, url) }
        #expect(error?.kind == .invalidURL)
        #expect(error?.description.hasPrefix("GET \(text): ") == true)
    }
}

/// python3's http.server serving `directory` on 127.0.0.1, stopped by its PID after `body`.
private func withPythonHTTPServer(serving directory: String, _ body: (Int) async throws -> Void) async throws {
    let (fd, port) = try listeningSocket()
    close(fd)  // a free port for python (another process could take it first; then the wait fails)
    let devNull = open("/dev/null", O_RDWR | O_CLOEXEC)
    defer { close(devNull) }
    let python = try ChildProcess(executable: "/usr/bin/python3",
                                  arguments: ["-m", "http.server", String(port), "--bind", "127.0.0.1", "--directory", directory],
                                  standardInput: devNull, standardOutput: devNull, standardError: devNull)
    do {
        let client = HTTPClient()
        let root = try #require(URL(string: "http://127.0.0.1:\(port)/"))
        try await waitUntil("python3 -m http.server listening on \(port)", seconds: 10) {
            (try? await client.send(.HEAD, root, timeout: .seconds(1))) != nil
        }
        try await body(port)
    } catch {
        await python.terminate(grace: .seconds(2))
        throw error
    }
    await python.terminate(grace: .seconds(2))
}
