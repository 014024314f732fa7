import CLinuxHelpers
import Glibc
@testable import MediaRouteIPC
import Synchronization
import Testing
import TestSupport

@Suite("Connection: handshake, requests, cancellation, descriptors, backpressure", .timeLimit(.minutes(1)))
struct ConnectionTests {
    @Test func handshakeExchangesIdentityAndAgreesOnTheSmallerFrameLimit() async throws {
        let (server, client) = try await connectedPair { $0.maximumFrameLength = $0.label == "supervisor" ? 65536 : 1 << 20 }
        let driver = try #require(await server.peer)
        #expect(driver.role == .driver)
        #expect(driver.identity["protocol"] == "org.mediaroute.reference")
        #expect(await server.label == "driver 'reference'")
        #expect(await client.peer?.role == .supervisor)
        // The client accepts 64 KiB: the server may not send it more.
        let big: JSONObject = ["blob": .string(String(repeating: "x", count: 70_000))]
        do {
            try await server.notify("x", big)
            Issue.record("an oversized message was sent")
        } catch let error as RPCError {
            #expect(error.code == .messageTooLarge)
            #expect(error.message.contains("65536-byte frame limit agreed with driver 'reference'"))
        }
        await server.close()
        await client.close()
    }

    @Test func versionMismatchIsRefusedWithASentenceOnBothSides() async throws {
        let (a, b) = try UnixSocket.pair()
        let peer = RawPeer(fd: b)
        async let server = Connection.open(socket: a, hello: Hello(role: .supervisor, name: "mediarouted"),
                                           side: .acceptor(acceptingRoles: [.driver]), configuration: ConnectionConfiguration(label: "new driver"))
        let reply = try await peer.hello(version: 2)
        guard case .errorResponse(.number(0), let error)? = reply else { Issue.record("expected an error, got \(String(describing: reply))"); return }
        #expect(error.code == .versionMismatch)
        #expect(error.message.contains("version 2"))
        #expect(try await peer.isClosedByPeer())
        do {
            _ = try await server
            Issue.record("handshake succeeded")
        } catch let error as RPCError {
            #expect(error.code == .versionMismatch)
            #expect(error.message.hasPrefix("handshake with new driver failed"))
        }
    }

    @Test func roleMismatchIsRefused() async throws {
        let (a, b) = try UnixSocket.pair()
        async let server = Connection.open(socket: a, hello: Hello(role: .supervisor, name: "mediarouted"),
                                           side: .acceptor(acceptingRoles: [.driver]), configuration: ConnectionConfiguration(label: "driver socket"))
        async let client = Connection.open(socket: b, hello: Hello(role: .app, name: "player"), side: .initiator(),
                                           configuration: ConnectionConfiguration(label: "supervisor"))
        do {
            _ = try await server
            Issue.record("the server accepted an app")
        } catch {
            #expect(error is RPCError)
        }
        do {
            _ = try await client
            Issue.record("an app was accepted on a driver socket")
        } catch let error as RPCError {
            #expect(error.code == .roleRejected)
            #expect(error.message.contains("role \"app\" is not accepted here (accepted: driver)"))
        }
    }

    @Test func handshakeTimesOutWhenThePeerSaysNothing() async throws {
        let (a, b) = try UnixSocket.pair()
        defer { close(b) }
        var configuration = ConnectionConfiguration(label: "silent driver")
        configuration.handshakeTimeout = .milliseconds(200)
        await #expect(throws: RPCError(.handshakeRequired, "silent driver did not complete the hello handshake within 0.2 seconds")) {
            _ = try await Connection.open(socket: a, hello: Hello(role: .supervisor, name: "s"), side: .acceptor(acceptingRoles: [.driver]),
                                          configuration: configuration)
        }
    }

    @Test func requestsAreAnsweredAndErrorsKeepTheirCode() async throws {
        let (server, client) = try await connectedPair()
        let reply = try await client.request("echo", ["n": 42, "s": "é"])
        #expect(reply.result == ["n": 42, "s": "é"])
        do {
            _ = try await client.request("fail", ["code": 1201, "message": "the device refused the code"])
            Issue.record("fail succeeded")
        } catch let error as RPCError {
            #expect(error == RPCError(RPCError.Code(1201), "the device refused the code"))
        }
        do {
            _ = try await client.request("no.such.method")
            Issue.record("unknown method succeeded")
        } catch let error as RPCError {
            #expect(error.code == .methodNotFound)
            #expect(error.message.contains("\"no.such.method\""))
        }
        // Many concurrent requests are each answered with their own result.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<200 {
                group.addTask {
                    let answer = try await client.request("echo", ["i": .integer(Int64(i))])
                    #expect(answer.result == ["i": .integer(Int64(i))])
                }
            }
            try await group.waitForAll()
        }
        #expect(await client.pendingRequestCount == 0)
        await server.close()
        await client.close()
    }

    /// A handler that never answers, recording whether it saw cancellation.
    private static func hangingHandlers(_ cancelled: Counter, started: Counter = Counter()) -> RPCHandlers {
        var handlers = echoHandlers()
        handlers.onRequest("hang") { _ in
            started.increment()
            do {
                try await Task.sleep(for: .seconds(30))
            } catch {
                cancelled.increment()
                throw error
            }
            return RPCReply()
        }
        return handlers
    }

    @Test func timeoutFailsTheRequestAndCancelsTheHandler() async throws {
        let cancelled = Counter()
        let (server, client) = try await connectedPair(serverHandlers: Self.hangingHandlers(cancelled))
        do {
            _ = try await client.request("hang", timeout: .milliseconds(100))
            Issue.record("hang returned")
        } catch let error as RPCError {
            #expect(error.code == .timedOut)
            #expect(error.message == "supervisor 'mediarouted' did not answer \"hang\" within 0.1 seconds; the request was cancelled")
        }
        try await waitUntil { cancelled.count == 1 }
        // The late "cancelled" answer is dropped quietly, and the connection still works.
        #expect(try await client.request("echo", ["ok": true]).result == ["ok": true])
        await server.close()
        await client.close()
    }

    /// What the conformance kit sends to check §7: a request with its `rpc.cancel` right behind
    /// it; the answer that crosses the cancel is dropped without a word, and the connection goes on.
    @Test func anAbandonedRequestGoesOutWithItsCancelAndItsAnswerIsDropped() async throws {
        let violations = ViolationLog()
        let (connection, peer) = try await acceptorWithRawPeer(violations: violations)
        try await connection.requestAbandoned("discovery.start", ["probe": true])
        let sent = try await peer.read(count: 2)
        guard sent.count == 2, case .request(let id, "discovery.start", ["probe": true]?, 0) = sent[0] else {
            Issue.record("expected the request first: \(sent)")
            return
        }
        guard case .notification("rpc.cancel", let params?, 0) = sent[1] else {
            Issue.record("expected its rpc.cancel right behind it: \(sent)")
            return
        }
        #expect(params["id"] == id.json)
        // The answer crosses the cancel; the peer's next request is still answered.
        try peer.send(.response(id: id, result: .object([:]), descriptorCount: 0))
        try peer.send(.request(id: .number(7), method: "echo", params: ["after": true], descriptorCount: 0))
        guard case .response(.number(7), ["after": true], 0)? = try await peer.read() else {
            Issue.record("the echo after the late answer was not answered")
            return
        }
        #expect(violations.all.isEmpty, "\(violations.all)")
        await connection.close()
    }

    @Test func aShortTimeoutAfterALongOneFiresOnItsOwnTime() async throws {
        let cancelled = Counter(), started = Counter()
        let (server, client) = try await connectedPair(serverHandlers: Self.hangingHandlers(cancelled, started: started))
        let long = Task { try await client.request("hang", timeout: .seconds(40)) }
        try await waitUntil { started.count == 1 }
        do {
            _ = try await client.request("hang", timeout: .milliseconds(100))
            Issue.record("hang returned")
        } catch let error as RPCError {
            #expect(error.code == .timedOut)
        }
        // Had the one timer stayed armed for the long request, both would have failed together.
        #expect(await client.pendingRequestCount == 1)
        try await waitUntil { cancelled.count == 1 }
        long.cancel()
        await #expect(throws: CancellationError.self) { try await long.value }
        try await waitUntil { cancelled.count == 2 }
        await server.close()
        await client.close()
    }

    /// A request's handler starts before the next frame is handled: a request and a notification
    /// read at once are handled in the order they were sent (IPC/README.md §3).
    @Test func aRequestsHandlerStartsBeforeTheNextFrameIsHandled() async throws {
        let order = Mutex<[String]>([])
        var handlers = RPCHandlers()
        handlers.onRequest("first") { _ in
            order.withLock { $0.append("first") }
            return RPCReply()
        }
        handlers.onNotification("second") { _ in order.withLock { $0.append("second") } }
        let (connection, peer) = try await acceptorWithRawPeer(handlers: handlers)
        // One write, so one read on the other side holds both frames.
        try peer.write(FrameEncoder.frame(Message.request(id: .number(1), method: "first", params: nil, descriptorCount: 0).encode())
            + FrameEncoder.frame(Message.notification(method: "second", params: nil, descriptorCount: 0).encode()))
        guard case .response(.number(1), _, _)? = try await peer.read() else { throw TestFailure("\"first\" was not answered") }
        #expect(order.withLock { $0 } == ["first", "second"])
        await connection.close()
    }

    /// The same for a burst that mixes handlers that suspend, notifications, immediate answers and a
    /// descriptor riding on a frame that had to wait: every handler starts in frame order, the
    /// descriptor reaches the notification that names it, and every request is answered.
    @Test func aBurstIsHandledInFrameOrderWithItsDescriptors() async throws {
        let order = Mutex<[String]>([])
        let received = Mutex<Int32?>(nil)
        var handlers = RPCHandlers()
        handlers.onRequest("slow") { request in
            order.withLock { $0.append("slow \(request.params["n"]?.integerValue ?? -1)") }
            try await Task.sleep(for: .milliseconds(20))
            return RPCReply()
        }
        handlers.onNotification("note") { notification in
            order.withLock { $0.append("note \(notification.params["n"]?.integerValue ?? -1)") }
            if let fd = try? notification.descriptors.take(0) { received.withLock { $0 = fd } }
        }
        handlers.onImmediateRequest("now") { request in
            order.withLock { $0.append("now \(request.params["n"]?.integerValue ?? -1)") }
            return RPCReply()
        }
        let (connection, peer) = try await acceptorWithRawPeer(handlers: handlers)
        var ends: [Int32] = [0, 0]
        pipe(&ends)
        defer { close(ends[0]); close(ends[1]) }
        var burst: [UInt8] = []
        for n in 0..<3 {
            burst += FrameEncoder.frame(Message.request(id: .number(Int64(n)), method: "slow", params: ["n": .integer(Int64(n))], descriptorCount: 0).encode())
            burst += FrameEncoder.frame(Message.notification(method: "note", params: ["n": .integer(Int64(n))], descriptorCount: n == 2 ? 1 : 0).encode())
            burst += FrameEncoder.frame(Message.request(id: .number(Int64(10 + n)), method: "now", params: ["n": .integer(Int64(n))], descriptorCount: 0).encode())
        }
        try peer.write(burst, descriptors: [ends[0]])  // rides on the first byte, claimed by the last frame
        let answers = try await peer.read(count: 6)
        let answered: [RequestID] = answers.compactMap { message in
            guard case .response(let id, _, _) = message else { return nil }
            return id
        }
        #expect(Set(answered) == [.number(0), .number(1), .number(2), .number(10), .number(11), .number(12)])
        #expect(order.withLock { $0 } == ["slow 0", "note 0", "now 0", "slow 1", "note 1", "now 1", "slow 2", "note 2", "now 2"])
        let fd = try #require(received.withLock { $0 })
        #expect(FileIdentity(descriptor: fd) == FileIdentity(descriptor: ends[0]))
        close(fd)
        await connection.close()
    }

    @Test func aHandlerThatClosesItsOwnConnectionEndsBothSidesCleanly() async throws {
        var handlers = echoHandlers()
        handlers.onRequest("quit") { request in
            await request.connection.close()
            return RPCReply()
        }
        let (server, client) = try await connectedPair(serverHandlers: handlers)
        do {
            _ = try await client.request("quit")
            Issue.record("quit was answered on a closed connection")
        } catch let error as RPCError {
            #expect(error.code == .connectionClosed)
        }
        #expect(await server.closeReason?.message.hasSuffix("was closed by this side") == true)
        #expect(await client.closeReason?.code == .connectionClosed)
    }

    @Test func cancellingTheTaskCancelsTheRemoteHandler() async throws {
        let cancelled = Counter()
        let (server, client) = try await connectedPair(serverHandlers: Self.hangingHandlers(cancelled))
        let task = Task { try await client.request("hang") }
        try await waitUntil { await client.pendingRequestCount == 1 }
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        try await waitUntil { cancelled.count == 1 }
        #expect(await client.pendingRequestCount == 0)
        await server.close()
        await client.close()
    }

    @Test func closingFailsEveryOutstandingRequest() async throws {
        let cancelled = Counter(), started = Counter()
        let (server, client) = try await connectedPair(serverHandlers: Self.hangingHandlers(cancelled, started: started))
        let tasks = (0..<3).map { _ in Task { try await client.request("hang") } }
        // Pending on the client is not yet received by the server: wait until all three run there.
        try await waitUntil { started.count == 3 }
        await server.close()
        for task in tasks {
            do {
                _ = try await task.value
                Issue.record("request survived the close")
            } catch let error as RPCError {
                #expect(error.code == .connectionClosed)
                #expect(error.message == "\"hang\" got no answer: supervisor 'mediarouted' closed the connection")
            }
        }
        #expect(await client.closeReason?.code == .connectionClosed)
        // The server's handlers were cancelled with the connection.
        try await waitUntil { cancelled.count == 3 }
    }

    /// Immediate handlers run on the loop thread as the frame is read, outside any task, and what
    /// they throw reaches the caller as a task-run handler's would.
    @Test func immediateHandlersAnswerOnTheLoopAndTheirErrorsKeepTheirCodes() async throws {
        var handlers = RPCHandlers()
        handlers.onImmediateRequest("where") { request in
            let inTask = withUnsafeCurrentTask { $0 != nil }
            return RPCReply(["loop": .bool(request.connection.loop.inLoopThread), "task": .bool(inTask)])
        }
        handlers.onImmediateRequest("refuse") { _ in throw RPCError(.invalidParams, "\"x\" must be a number") }
        handlers.onImmediateRequest("break") { _ in throw TestFailure("disk on fire") }
        let (server, client) = try await connectedPair(serverHandlers: handlers)
        #expect(try await client.request("where").result == ["loop": true, "task": false])
        await #expect(throws: RPCError(.invalidParams, "\"x\" must be a number")) { try await client.request("refuse") }
        await #expect(throws: RPCError(.internalError, "\"break\" failed: disk on fire")) { try await client.request("break") }
        #expect(await server.closeReason == nil)
        await server.close()
        await client.close()
    }

    @Test(arguments: [false, true])
    func descriptorsTravelBothWaysWithoutLeaking(answeredImmediately: Bool) async throws {
        var handlers = RPCHandlers()
        // Writes a greeting into the pipe it is given, then answers with a new pipe's read end.
        let greet: RPCHandlers.ImmediateRequestHandler = { request in
            let fd = try request.descriptors.take(0)
            defer { close(fd) }
            let text = request.params["text"]?.stringValue ?? ""
            _ = text.withCString { write(fd, $0, strlen($0)) }
            var ends: [Int32] = [0, 0]
            pipe(&ends)
            _ = write(ends[1], "back", 4)
            close(ends[1])
            return RPCReply(["pipe": 0], descriptors: [ends[0]])  // the reply owns and closes it
        }
        if answeredImmediately {
            handlers.onImmediateRequest("pipe.greet", greet)
        } else {
            handlers.onRequest("pipe.greet") { try greet($0) }
        }
        let (server, client) = try await connectedPair(serverHandlers: handlers)
        for i in 0..<50 {
            var ends: [Int32] = [0, 0]
            #expect(pipe(&ends) == 0)
            let requestPipe = try #require(FileIdentity(descriptor: ends[0]))
            let reply = try await client.request("pipe.greet", ["text": .string("hello \(i)")], descriptors: [ends[1]])
            close(ends[1])
            var buffer = [UInt8](repeating: 0, count: 32)
            let n = read(ends[0], &buffer, 32)
            close(ends[0])
            #expect(String(decoding: buffer[0..<max(n, 0)], as: UTF8.self) == "hello \(i)")
            #expect(requestPipe.descriptorCount == 0)  // every copy of the request's pipe is closed
            let back = try reply.descriptors.take(0)
            #expect(read(back, &buffer, 32) == 4)
            #expect(FileIdentity(descriptor: back)?.descriptorCount == 1)  // the server's copy is gone
            close(back)
        }
        await server.close()
        await client.close()
    }

    @Test func untakenDescriptorsAreClosed() async throws {
        let (server, client) = try await connectedPair()
        var ends: [Int32] = [0, 0]
        clh_pipe_cloexec(&ends)  // close-on-exec: a child another test spawns must not hold the write end
        // "echo" ignores the descriptor: the receiving side must close it, so the read end sees EOF.
        _ = try await client.request("echo", [:], descriptors: [ends[1]])
        close(ends[1])
        var byte: UInt8 = 0
        #expect(read(ends[0], &byte, 1) == 0)
        #expect(FileIdentity(descriptor: ends[0])?.descriptorCount == 1)
        close(ends[0])
        await server.close()
        await client.close()
    }

    @Test func outgoingQueueIsBoundedAndSendersWait() async throws {
        let (a, b) = try UnixSocket.pair()
        let peer = RawPeer(fd: b)
        var configuration = ConnectionConfiguration(label: "slow reader")
        configuration.outgoingHighWater = 256 * 1024
        async let opened = Connection.open(socket: a, hello: Hello(role: .driver, name: "flood"), side: .initiator(), configuration: configuration)
        // Answer the hello by hand, then stop reading.
        guard case .request(let id, "hello", _, _)? = try await peer.read() else { throw TestFailure("no hello") }
        try peer.send(.response(id: id, result: .object(Hello(role: .supervisor, name: "s").json), descriptorCount: 0))
        let connection = try await opened
        let sent = Counter()
        let payload: JSONObject = ["data": .string(String(repeating: "z", count: 1000))]
        let producer = Task {
            for _ in 0..<5000 {
                try await connection.notify("bulk", payload)
                sent.increment()
            }
        }
        // The kernel buffers a few hundred KiB, our queue 256 KiB: the producer must stall well short of 5 MB.
        try await Task.sleep(for: .milliseconds(300))
        let stalledAt = sent.count
        #expect(stalledAt < 5000)
        #expect(await connection.unsentByteCountForTesting <= 256 * 1024 + 2048)
        // Once the peer reads, everything arrives, in order.
        let received = try await peer.read(count: 5000)
        try await producer.value
        #expect(received.count == 5000)
        #expect(received.allSatisfy { $0 == .notification(method: "bulk", params: payload, descriptorCount: 0) })
        await connection.close()
    }

    @Test func oneConnectionsFailureLeavesAnotherUntouched() async throws {
        let (goodServer, goodClient) = try await connectedPair()
        let (badConnection, badPeer) = try await acceptorWithRawPeer()
        try badPeer.write([0, 0, 0, 0])  // zero-length frame: fatal for that connection only
        _ = await badConnection.waitUntilClosed()
        #expect(try await goodClient.request("echo", ["still": "here"]).result == ["still": "here"])
        await goodServer.close()
        await goodClient.close()
    }
}

