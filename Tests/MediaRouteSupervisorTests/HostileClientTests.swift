import Foundation
import Glibc
@testable import MediaRouteIPC
import Testing
import TestSupport

/// A local program attacking the control socket as a hostile or broken client would: the daemon's
/// memory stays bounded, it says why it refuses, and every other client is served meanwhile.
@Suite("mediarouted against hostile local clients", .timeLimit(.minutes(2)))
struct HostileClientTests {
    private struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// A control client's socket after its `hello` was answered (or refused): blocking, raw.
    private struct RawClient {
        let fd: Int32
        /// The answer to `hello`: nil when it was accepted, else the error the daemon sent.
        let refusal: RPCError?

        static func connect(_ path: String) throws -> RawClient {
            let fd = try UnixSocket.connect(path: path)
            let hello = Message.request(id: .number(1), method: "hello", params: Hello(role: .control, name: "raw").json, descriptorCount: 0)
            let frame = FrameEncoder.frame(hello.encode())
            guard frame.withUnsafeBytes({ Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == frame.count else {
                close(fd)
                throw Failure("could not send hello")
            }
            var decoder = FrameDecoder()
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                if let body = try decoder.nextFrame() {
                    switch try Message.decode(body) {
                    case .response: return RawClient(fd: fd, refusal: nil)
                    case .errorResponse(_, let error): close(fd); return RawClient(fd: -1, refusal: error)
                    default: close(fd); throw Failure("unexpected answer to hello")
                    }
                }
                var pollFD = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&pollFD, 1, 20_000) == 1 else { close(fd); throw Failure("no answer to hello within 20 s") }
                let n = read(fd, &buffer, buffer.count)
                guard n > 0 else { close(fd); throw Failure("the daemon closed the connection without a word") }
                decoder.append(buffer[0..<n])
            }
        }
    }

    /// Up to `count` clients, fewer if one fails to connect or a minute passes (those made are kept, to be closed).
    private static func connect(_ count: Int, to socket: String) -> [RawClient] {
        var clients: [RawClient] = []
        let deadline = ContinuousClock.now + .seconds(60)
        for _ in 0..<count where ContinuousClock.now < deadline {
            guard let client = try? RawClient.connect(socket) else { break }
            clients.append(client)
        }
        return clients
    }

    @Test func aClientThatNeverReadsItsAnswersCostsABoundedAmountAndOthersAreServed() async throws {
        try await DaemonHarness.run { harness in
            try harness.drivers.addDriver("org.test.alpha", devices: ["Den TV"])
            try await harness.start()
            #expect(await harness.cli(["status"]).status == .exited(0))
            let before = try #require(harness.residentKiB)
            let client = try await onThreadOfItsOwn { [socket = harness.socket] in try RawClient.connect(socket) }
            defer { close(client.fd) }
            // 200,000 `status` requests, never reading: the daemon must stop reading long before.
            let sent = try await onThreadOfItsOwn { () throws -> Int in
                _ = fcntl(client.fd, F_SETFL, fcntl(client.fd, F_GETFL) | O_NONBLOCK)
                var sent = 0
                var pending: [UInt8] = [], offset = 0
                while sent < 200_000 {
                    if pending.isEmpty {
                        pending = FrameEncoder.frame(Message.request(id: .number(Int64(sent + 2)), method: "status", params: nil, descriptorCount: 0).encode())
                        offset = 0
                    }
                    let n = pending[offset...].withUnsafeBytes { Glibc.send(client.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    if n > 0 {
                        offset += n
                        if offset == pending.count { sent += 1; pending = [] }
                    } else if errno == EAGAIN {
                        var pollFD = pollfd(fd: client.fd, events: Int16(POLLOUT), revents: 0)
                        if poll(&pollFD, 1, 1000) == 0 { return sent }
                    } else {
                        throw Failure("send failed: errno \(errno)")
                    }
                }
                return sent
            }
            #expect(sent < 50_000, "the daemon kept reading a client that takes no answers: \(sent) requests went in")
            let during = try #require(harness.residentKiB)
            #expect(during - before < 24 * 1024, "the daemon grew from \(before) to \(during) KiB")
            // Everyone else is served meanwhile.
            let status = await harness.cli(["drivers"])
            #expect(status.status == .exited(0), "\(status.error)")
            #expect(status.output.contains("org.test.alpha"))
        }
    }

    @Test func connectionsPerUserAreCappedWithASentenceAndMemoryReturnsAfterwards() async throws {
        try await DaemonHarness.run { harness in
            try await harness.start(["--connections-per-user", "1000"])
            #expect(await harness.cli(["status"]).status == .exited(0))
            let start = try #require(harness.residentKiB)
            var peak = start
            for _ in 0..<3 {
                // The daemon counts a connection gone once it has seen it close: wait for room.
                var clients: [RawClient] = []
                try await waitUntil("room for 1,000 connections again") {
                    clients.forEach { close($0.fd) }
                    clients = (try? await onThreadOfItsOwn { Self.connect(1000, to: harness.socket) }) ?? []
                    return clients.count == 1000 && clients.allSatisfy { $0.refusal == nil }
                }
                peak = max(peak, harness.residentKiB ?? 0)
                // One more is refused, with a sentence the CLI shows.
                let refused = await harness.cli(["status"])
                #expect(refused.status == .exited(1))
                #expect(refused.error.contains("already has 1000 connections open to mediarouted, its limit; close some and try again"), "\(refused.error)")
                clients.forEach { close($0.fd) }
            }
            #expect(peak - start > 6 * 1024, "1,000 connections cost only \(peak - start) KiB: too little to tell whether memory returns")
            try await waitUntil("the daemon's memory back within 4 MiB of where it started (\(start) KiB)", seconds: 15) {
                (harness.residentKiB ?? .max) < start + 4 * 1024
            }
            #expect(await harness.cli(["status"]).status == .exited(0))
        }
    }
}
