import Glibc
@testable import MediaRouteIPC
import Testing

/// A peer that sends and never takes what it is sent, or goes quiet in the middle of a frame, costs
/// this side a bounded amount of memory and, if it keeps it up, its connection (IPC/README.md §9).
@Suite("Backpressure and unfinished frames", .timeLimit(.minutes(1)))
struct BackpressureTests {
    private static let highWater = 64 * 1024
    private static let pad: JSONValue = .string(String(repeating: "p", count: 1000))

    /// Writes `echo` requests (about 1 KB each, ids from 0) until the connection takes no more for
    /// `patience` ms, until it closes, or until `limit` went out. Returns how many went out whole and the rest of the one cut short.
    private func flood(_ peer: RawPeer, limit: Int, patience: Int32 = 1000) async throws -> (sent: Int, rest: [UInt8]) {
        let fd = peer.fd
        return try await onThreadOfItsOwn {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            defer { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) }
            var sent = 0
            var frame: [UInt8] = [], offset = 0
            while sent < limit {
                if frame.isEmpty {
                    frame = FrameEncoder.frame(Message.request(id: .number(Int64(sent)), method: "echo", params: ["pad": Self.pad], descriptorCount: 0).encode())
                    offset = 0
                }
                let n = frame[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if n > 0 {
                    offset += n
                    if offset == frame.count { sent += 1; frame = [] }
                } else if errno == EAGAIN {
                    var pollFD = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                    if poll(&pollFD, 1, patience) == 0 { break }
                } else if errno == EPIPE || errno == ECONNRESET {
                    break  // the connection gave up on us
                } else {
                    throw TestFailure("send failed: errno \(errno)")
                }
            }
            return (sent, Array(frame[offset...]))
        }
    }

    @Test func aPeerThatTakesNoAnswersIsReadNoFurtherAndLosesNothing() async throws {
        let (connection, peer) = try await acceptorWithRawPeer { $0.outgoingHighWater = Self.highWater }
        let (sent, rest) = try await flood(peer, limit: 20_000)
        // Without backpressure all 20,000 go in (20 MB of answers queued); with it, the socket
        // buffers and the outgoing bound hold a few hundred.
        #expect(sent < 2_000, "the connection kept reading: \(sent) requests went in")
        #expect(await connection.unsentByteCountForTesting <= 4 * Self.highWater)
        #expect(await connection.closeReason == nil)
        // Once the peer reads, every request is answered, and the one cut short goes through too.
        let whole = rest.isEmpty ? sent : sent + 1
        async let finished: Void = onThreadOfItsOwn { try peer.write(rest) }
        let answers = try await peer.read(count: whole)
        try await finished
        let ids = answers.compactMap { message -> Int64? in
            guard case .response(.number(let id), let result, _) = message, result == ["pad": Self.pad] else { return nil }
            return id
        }
        #expect(Set(ids) == Set((0..<Int64(whole))))
        await connection.close()
    }

    @Test func aPeerThatStopsReadingForGoodIsDisconnected() async throws {
        let violations = ViolationLog()
        let (connection, peer) = try await acceptorWithRawPeer(violations: violations) {
            $0.outgoingHighWater = Self.highWater
            $0.stalledReaderTimeout = .milliseconds(300)
        }
        // Sent until the connection gives up on us (a busy machine may keep it from reading for a
        // while: the flood does not stop at the first pause), so the output surely fills.
        _ = try await flood(peer, limit: 20_000, patience: 20_000)
        let reason = try #require(await connection.closeReason, "the connection kept a peer that took nothing for 20 s")
        #expect(reason.code == .overloaded)
        #expect(reason.message.hasPrefix("driver 'raw' stopped reading: "), "\(reason.message)")
        #expect(reason.message.hasSuffix(" bytes waited 0.3 seconds to be sent to it"), "\(reason.message)")
        #expect(violations.all.map(\.code) == [.overloaded])
    }

    /// This side sends (notifications, requests, a heartbeat) to a peer that reads nothing and says
    /// nothing: the senders would wait for room forever, so the connection ends instead.
    @Test func aPeerThatTakesNothingWeSendIsDisconnected() async throws {
        let (connection, peer) = try await acceptorWithRawPeer {
            $0.outgoingHighWater = Self.highWater
            $0.stalledReaderTimeout = .milliseconds(300)
        }
        defer { withExtendedLifetime(peer) {} }  // silent, but there
        let producer = Task {
            while true { try await connection.notify("bulk", ["pad": Self.pad]) }
        }
        let reason = await connection.waitUntilClosed()
        #expect(reason.code == .overloaded)
        #expect(reason.message.hasSuffix(" bytes waited 0.3 seconds to be sent to it"), "\(reason.message)")
        let stopped = await #expect(throws: RPCError.self) { try await producer.value }
        #expect(stopped?.code == .overloaded)
    }

    @Test func aFrameBegunAndNeverFinishedEndsTheConnectionAtItsDeadline() async throws {
        let violations = ViolationLog()
        let (connection, peer) = try await acceptorWithRawPeer(violations: violations) { $0.frameReadTimeout = .milliseconds(200) }
        try peer.write([0, 0, 0, 100] + Array(#"{"jsonrpc":"#.utf8))
        let reason = await connection.waitUntilClosed()
        #expect(reason.code == .frameError)
        #expect(reason.message == "driver 'raw' sent 11 of the 100 bytes of a frame body and did not finish the frame within 0.2 seconds")
        guard case .errorResponse(nil, let told)? = try await peer.read() else { throw TestFailure("the peer was not told") }
        #expect(told == reason)
        #expect(try await peer.isClosedByPeer())
        #expect(violations.all.map(\.code) == [.frameError])
    }

    @Test func aFrameSentInPiecesWithinTheDeadlineIsFine() async throws {
        let (connection, peer) = try await acceptorWithRawPeer { $0.frameReadTimeout = .seconds(2) }
        let frame = FrameEncoder.frame(Message.request(id: .number(1), method: "echo", params: ["n": 1], descriptorCount: 0).encode())
        // Half a frame, then the rest, well within the deadline.
        try peer.write(Array(frame[..<10]))
        #expect(await connection.closeReason == nil)
        try peer.write(Array(frame[10...]))
        #expect(try await peer.read() == .response(id: .number(1), result: ["n": 1], descriptorCount: 0))
        #expect(await connection.closeReason == nil)
        await connection.close()
    }
}
