import Glibc
@testable import MediaRouteIPC
import TestSupport
import Testing

/// Every kind of bad input a peer can send, against a live connection: each gets a specific error,
/// touches only its own connection, and never crashes the process.
@Suite("Bad input from a peer", .timeLimit(.minutes(1)))
struct BadInputTests {
    private func expectError(_ message: Message?, id: RequestID?, code: RPCError.Code, containing text: String,
                             sourceLocation: SourceLocation = #_sourceLocation) {
        guard case .errorResponse(let gotID, let error)? = message else {
            Issue.record("expected an error reply, got \(String(describing: message))", sourceLocation: sourceLocation)
            return
        }
        #expect(gotID == id, sourceLocation: sourceLocation)
        #expect(error.code == code, sourceLocation: sourceLocation)
        #expect(error.message.contains(text), "\(error.message)", sourceLocation: sourceLocation)
    }

    /// The connection still answers requests after the fault.
    private func expectStillServing(_ peer: RawPeer, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        try peer.send(.request(id: .number(99), method: "echo", params: ["alive": true], descriptorCount: 0))
        #expect(try await peer.read() == .response(id: .number(99), result: ["alive": true], descriptorCount: 0), sourceLocation: sourceLocation)
    }

    @Test func truncatedHeaderThenClose() async throws {
        let violations = ViolationLog()
        let (connection, peer) = try await acceptorWithRawPeer(violations: violations)
        try peer.write([0, 0])
        shutdown(peer.fd, Int32(SHUT_WR))
        let reason = await connection.waitUntilClosed()
        #expect(reason.code == .frameError)
        #expect(reason.message == "driver 'raw' closed the connection mid-frame: the peer closed the stream after 2 of the 4 bytes of a frame header")
        #expect(violations.all.map(\.code) == [.frameError])
    }

    @Test func peerClosingMidFrame() async throws {
        let (connection, peer) = try await acceptorWithRawPeer()
        try peer.write([0, 0, 0, 100] + Array(#"{"jsonrpc":"#.utf8))
        shutdown(peer.fd, Int32(SHUT_WR))
        let reason = await connection.waitUntilClosed()
        #expect(reason.message.hasSuffix("after 11 of the 100 bytes of a frame body"))
    }

    @Test func zeroLengthFrame() async throws {
        let (connection, peer) = try await acceptorWithRawPeer()
        try peer.write([0, 0, 0, 0])
        expectError(try await peer.read(), id: nil, code: .frameError, containing: "frame header announces length 0")
        #expect(try await peer.isClosedByPeer())
        #expect(await connection.closeReason?.code == .frameError)
    }

    @Test func lengthOverTheNegotiatedMaximum() async throws {
        let (connection, peer) = try await acceptorWithRawPeer(maximumFrameLength: 4096)
        try peer.write([0, 0, 0x10, 0x01] + Array(repeating: UInt8(ascii: " "), count: 16))
        expectError(try await peer.read(), id: nil, code: .messageTooLarge, containing: "announces 4097 bytes, over the negotiated maximum of 4096 bytes")
        #expect(try await peer.isClosedByPeer())
        #expect(await connection.closeReason?.code == .messageTooLarge)
    }

    @Test func invalidUTF8KeepsTheConnection() async throws {
        let violations = ViolationLog()
        let (connection, peer) = try await acceptorWithRawPeer(violations: violations)
        try peer.write(FrameEncoder.frame(Array(#"{"a":""#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8)))
        expectError(try await peer.read(), id: nil, code: .parseError, containing: "not valid UTF-8 (first bad byte at offset 6)")
        try await expectStillServing(peer)
        #expect(violations.all.count == 1)
        await connection.close()
    }

    @Test func invalidJSON() async throws {
        let (connection, peer) = try await acceptorWithRawPeer()
        try peer.writeFrame(#"{"jsonrpc":"2.0",}"#)
        expectError(try await peer.read(), id: nil, code: .parseError, containing: "unexpected '}' at offset 17")
        try await expectStillServing(peer)
        await connection.close()
    }

    @Test func validJSONOfTheWrongShape() async throws {
        let (connection, peer) = try await acceptorWithRawPeer()
        try peer.writeFrame(#"[1,2,3]"#)
        expectError(try await peer.read(), id: nil, code: .invalidRequest, containing: "a message must be a JSON object, got an array")
        try peer.writeFrame(#"{"jsonrpc":"2.0","id":5,"method":"echo","params":"x"}"#)
        expectError(try await peer.read(), id: .number(5), code: .invalidRequest, containing: "\"params\" of \"echo\" must be an object, got a string")
        try await expectStillServing(peer)
        await connection.close()
    }

    @Test func unknownMethodGetsMethodNotFound() async throws {
        let violations = ViolationLog()
        let (connection, peer) = try await acceptorWithRawPeer(violations: violations)
        try peer.send(.request(id: .number(3), method: "device.teleport", params: nil, descriptorCount: 0))
        expectError(try await peer.read(), id: .number(3), code: .methodNotFound, containing: "\"device.teleport\"")
        #expect(violations.all.isEmpty)  // asking for something unknown is allowed, not a violation
        await connection.close()
    }

    @Test func responseToAnUnknownIdIsReportedNotAnswered() async throws {
        let violations = ViolationLog()
        let (connection, peer) = try await acceptorWithRawPeer(violations: violations)
        try peer.send(.response(id: .number(4242), result: true, descriptorCount: 0))
        try await expectStillServing(peer)  // the next thing the peer reads is the echo, not an error
        #expect(violations.all.map(\.code) == [.unknownResponseID])
        #expect(violations.all.first?.message.contains("request id 4242, which this side never sent") == true)
        await connection.close()
    }

    @Test func duplicateRequestIds() async throws {
        var handlers = echoHandlers()
        handlers.onRequest("slow") { _ in
            try await Task.sleep(for: .milliseconds(200))
            return RPCReply("done")
        }
        let violations = ViolationLog()
        let (connection, peer) = try await acceptorWithRawPeer(handlers: handlers, violations: violations)
        try peer.send(.request(id: .number(5), method: "slow", params: nil, descriptorCount: 0))
        try peer.send(.request(id: .number(5), method: "echo", params: [:], descriptorCount: 0))
        expectError(try await peer.read(), id: .number(5), code: .duplicateRequestID, containing: "reused request id 5 while that request is still in progress")
        #expect(try await peer.read() == .response(id: .number(5), result: "done", descriptorCount: 0))
        #expect(violations.all.map(\.code) == [.duplicateRequestID])
        await connection.close()
    }

    @Test func frameNamingMoreDescriptorsThanItCarried() async throws {
        let (_, peer) = try await acceptorWithRawPeer()
        var ends: [Int32] = [0, 0]
        pipe(&ends)
        defer { close(ends[0]); close(ends[1]) }
        try peer.send(.request(id: .number(6), method: "echo", params: [:], descriptorCount: 3), descriptors: [ends[0]])
        expectError(try await peer.read(), id: nil, code: .descriptorMismatch, containing: "naming 3 file descriptors, but its frame carried 1")
        #expect(try await peer.isClosedByPeer())
        #expect(FileIdentity(descriptor: ends[0])?.descriptorCount == 2)  // our two ends only: the received copy was closed
    }

    @Test func descriptorsNoMessageNamed() async throws {
        let (connection, peer) = try await acceptorWithRawPeer()
        var ends: [Int32] = [0, 0]
        pipe(&ends)
        defer { close(ends[0]); close(ends[1]) }
        try peer.send(.notification(method: "anything", params: nil, descriptorCount: 0), descriptors: [ends[0]])
        expectError(try await peer.read(), id: nil, code: .descriptorMismatch, containing: "sent 1 file descriptor(s) that no message named")
        #expect(await connection.waitUntilClosed().code == .descriptorMismatch)
        #expect(FileIdentity(descriptor: ends[0])?.descriptorCount == 2)
    }

    /// §5: an `fds` outside 0…16 is the wrong shape (`-32600`, the connection kept); only when
    /// descriptors came with that frame does the connection close, for them (`-32007`).
    @Test func fdsOutOfRangeIsTheWrongShape() async throws {
        let (connection, peer) = try await acceptorWithRawPeer()
        try peer.writeFrame(#"{"jsonrpc":"2.0","id":7,"method":"echo","params":{},"fds":17}"#)
        expectError(try await peer.read(), id: .number(7), code: .invalidRequest, containing: "\"fds\" must be an integer from 0 to 16")
        try peer.writeFrame(#"{"jsonrpc":"2.0","id":8,"method":"echo","params":{},"fds":-1}"#)
        expectError(try await peer.read(), id: .number(8), code: .invalidRequest, containing: "\"fds\" must be an integer from 0 to 16")
        try await expectStillServing(peer)

        var ends: [Int32] = [0, 0]
        pipe(&ends)
        defer { close(ends[0]); close(ends[1]) }
        try peer.writeFrame(#"{"jsonrpc":"2.0","id":9,"method":"echo","params":{},"fds":17}"#, descriptors: [ends[0]])
        expectError(try await peer.read(), id: .number(9), code: .invalidRequest, containing: "\"fds\" must be an integer from 0 to 16")
        expectError(try await peer.read(), id: nil, code: .descriptorMismatch, containing: "sent 1 file descriptor(s) that no message named")
        #expect(await connection.waitUntilClosed().code == .descriptorMismatch)
        #expect(FileIdentity(descriptor: ends[0])?.descriptorCount == 2)  // the received copy was closed
    }

    @Test func disconnectPolicyClosesOnTheFirstViolation() async throws {
        let (connection, peer) = try await acceptorWithRawPeer(policy: .disconnect)
        try peer.writeFrame("not json")
        expectError(try await peer.read(), id: nil, code: .parseError, containing: "unexpected 'o' at offset 1")
        #expect(try await peer.isClosedByPeer())
        #expect(await connection.closeReason?.code == .parseError)
    }

    @Test func requestBeforeHello() async throws {
        let (a, b) = try UnixSocket.pair()
        let peer = RawPeer(fd: b)
        async let opened = Connection.open(socket: a, hello: Hello(role: .supervisor, name: "s"), side: .acceptor(acceptingRoles: [.driver]),
                                           configuration: ConnectionConfiguration(label: "eager driver"))
        try peer.send(.request(id: .number(1), method: "device.list", params: nil, descriptorCount: 0))
        expectError(try await peer.read(), id: .number(1), code: .handshakeRequired, containing: "the first message must be hello, not \"device.list\"")
        #expect(try await peer.isClosedByPeer())
        do {
            _ = try await opened
            Issue.record("handshake succeeded")
        } catch let error as RPCError {
            #expect(error.message == "eager driver sent \"device.list\" before completing the hello handshake")
        }
    }

    /// `features` is optional in `hello` (§4): a peer that leaves it out is accepted, with none.
    @Test func helloWithoutFeaturesIsAccepted() async throws {
        let (a, b) = try UnixSocket.pair()
        let peer = RawPeer(fd: b)
        async let connection = Connection.open(socket: a, hello: Hello(role: .supervisor, name: "supervisor"),
                                               side: .acceptor(acceptingRoles: [.driver]), configuration: ConnectionConfiguration(label: "test peer"))
        try peer.writeFrame(#"{"jsonrpc":"2.0","id":0,"method":"hello","params":{"version":1,"role":"driver","identity":{"name":"plain"},"maxFrameLength":65536}}"#)
        guard case .response(.number(0), _, _)? = try await peer.read() else { throw TestFailure("the hello was not answered") }
        let opened = try await connection
        #expect(await opened.peer?.features == [])
        await opened.close()
    }

    @Test func floodOfRequestsIsBounded() async throws {
        var handlers = RPCHandlers()
        handlers.onRequest("slow") { _ in
            try await Task.sleep(for: .seconds(5))
            return RPCReply()
        }
        let violations = ViolationLog()
        let (connection, peer) = try await acceptorWithRawPeer(handlers: handlers, violations: violations)
        let limit = ConnectionConfiguration(label: "").maximumConcurrentIncomingRequests
        var burst: [UInt8] = []
        for i in 0...limit { burst += FrameEncoder.frame(Message.request(id: .number(Int64(i)), method: "slow", params: nil, descriptorCount: 0).encode()) }
        try peer.write(burst)
        expectError(try await peer.read(), id: .number(Int64(limit)), code: .overloaded, containing: "more than \(limit) requests in progress")
        #expect(violations.all.map(\.code) == [.overloaded])
        await connection.close()
    }

    /// Writing to a peer that has gone raises no SIGPIPE: the sender gets an error naming the cause.
    @Test func writingToAVanishedPeerIsAnErrorNotASignal() async throws {
        let (connection, peer) = try await acceptorWithRawPeer()
        peer.close()
        var failure: RPCError?
        for _ in 0..<100 where failure == nil {
            do {
                try await connection.notify("ping", ["pad": .string(String(repeating: "p", count: 4096))])
                try await Task.sleep(for: .milliseconds(5))
            } catch let error as RPCError {
                failure = error
            }
        }
        #expect(failure?.code == .connectionClosed)
        let reason = await connection.closeReason
        // EOF, EPIPE or ECONNRESET, depending on timing: each is named.
        let named = ["driver 'raw' closed the connection", "Broken pipe", "Connection reset by peer"]
        #expect(reason?.code == .connectionClosed && named.contains { reason?.message.contains($0) == true }, "\(String(describing: reason))")
    }
}
