import NIOCore
import PrivateDaemons
import RAOP
import Testing

/// What a broken or hostile receiver can send is an error value naming what was wrong: never a
/// crash, never a read without bound.
@Suite struct RAOPHostileReceiverTests {
    /// One OPTIONS request to a server running `script`: the error it ends in.
    func optionsError(_ script: ScriptedRTSPServer.Script, timeout: Duration = .seconds(2)) async throws -> RAOPError? {
        let server = try await ScriptedRTSPServer.start(script)
        return try await withTearDown { () async throws -> RAOPError? in
            let client = try await RTSPClient.connect(host: "127.0.0.1", port: server.port, commonHeaders: [("User-Agent", "test")], timeout: timeout)
            let result: RAOPError?
            do throws(RAOPError) {
                let response = try await client.send(RTSPRequest(method: "OPTIONS", uri: "*"))
                Issue.record("a hostile answer was accepted: \(response.status)")
                result = nil
            } catch {
                result = error
            }
            await client.close()
            return result
        } tearDown: {
            await server.stop()
        }
    }

    @Test(.timeLimit(.minutes(1))) func garbageIsAMalformedResponse() async throws {
        let error = try await optionsError(.answer(Array("HELLO THERE\r\nwhatever\r\n\r\n".utf8)))
        #expect(error?.code == .malformedResponse)
        #expect(error?.message.contains("status line") == true, "\(String(describing: error))")
    }

    @Test(.timeLimit(.minutes(1))) func binaryGarbageIsAMalformedResponse() async throws {
        let error = try await optionsError(.answer([0xff, 0xfe, 0x00, 0x80] + Array("\r\n\r\n".utf8)))
        #expect(error?.code == .malformedResponse, "\(String(describing: error))")
    }

    @Test(.timeLimit(.minutes(1))) func endlessHeadersStopAtTheLimit() async throws {
        // 4 MB of header lines: the client gives up after 16 KiB, not after reading them all.
        let error = try await optionsError(.endlessHeaders(count: 4 << 20))
        #expect(error?.code == .responseTooLarge, "\(String(describing: error))")
    }

    @Test(.timeLimit(.minutes(1))) func tooManyHeadersAndAHugeBodyAreRefused() async throws {
        let many = "RTSP/1.0 200 OK\r\nCSeq: 1\r\n" + String(repeating: "A: b\r\n", count: 100) + "\r\n"
        #expect(try await optionsError(.answer(Array(many.utf8)))?.code == .responseTooLarge)
        let huge = "RTSP/1.0 200 OK\r\nCSeq: 1\r\nContent-Length: 999999999999\r\n\r\n"
        #expect(try await optionsError(.answer(Array(huge.utf8)))?.code == .responseTooLarge)
        let lying = "RTSP/1.0 200 OK\r\nCSeq: 1\r\nContent-Length: twelve\r\n\r\n"
        #expect(try await optionsError(.answer(Array(lying.utf8)))?.code == .malformedResponse)
    }

    @Test(.timeLimit(.minutes(1))) func anAnswerWithoutOrWithTheWrongCSeqIsMalformed() async throws {
        let none = try await optionsError(.answer(Array("RTSP/1.0 200 OK\r\nServer: x\r\n\r\n".utf8)))
        #expect(none?.code == .malformedResponse)
        #expect(none?.message.contains("CSeq") == true, "\(String(describing: none))")
        let wrong = try await optionsError(.answer(Array("RTSP/1.0 200 OK\r\nCSeq: 42\r\n\r\n".utf8)))
        #expect(wrong?.code == .malformedResponse)
    }

    @Test(.timeLimit(.minutes(1))) func hangUpAndSilenceAreClosedAndTimedOut() async throws {
        #expect(try await optionsError(.hangUp)?.code == .connectionClosed)
        // Silence ends at the client's own deadline (its sentence names it), not at some later one.
        let silence = try await optionsError(.silence, timeout: .milliseconds(300))
        #expect(silence?.code == .timedOut)
        #expect(silence?.message.contains("within 0.3 seconds") == true, "\(String(describing: silence))")
    }

    @Test(.timeLimit(.minutes(1))) func theSenderReportsAHostileReceiverAndAWrongStatus() async throws {
        let server = try await ScriptedRTSPServer.start(.answer(Array("RTSP/1.0 453 Not Enough Bandwidth\r\nCSeq: 1\r\n\r\n".utf8)))
        try await withTearDown {
            let sender = RAOPSender(configuration: RAOPSenderConfiguration(host: "127.0.0.1", port: server.port))
            do throws(RAOPError) {
                try await sender.start()
                Issue.record("a 453 to OPTIONS started a session")
            } catch {
                #expect(error.code == .unexpectedStatus)
                #expect(error.message.contains("453"), "\(error)")
            }
            await sender.teardown()
        } tearDown: {
            await server.stop()
        }
    }
}
