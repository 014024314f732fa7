import CLinuxHelpers
import Foundation
import Glibc
@testable import MediaRouteIPC
import Testing
import TestSupport

/// The far end of a socketpair driven byte by byte, to say exactly what a misbehaving peer says.
/// Every read is bounded by a poll timeout, so a test can fail but never hang.
final class RawPeer: @unchecked Sendable {
    private var decoder = FrameDecoder()

    private(set) var fd: Int32

    init(fd: Int32) { self.fd = fd }
    deinit { if fd >= 0 { Glibc.close(fd) } }

    /// Closes our end now, as a peer that vanishes does.
    func close() {
        Glibc.close(fd)
        fd = -1
    }

    func write(_ bytes: [UInt8], descriptors: [Int32] = []) throws {
        var offset = 0
        while offset < bytes.count {
            let n = try bytes.withUnsafeBytes { buffer in
                try UnixSocket.send(fd, UnsafeRawBufferPointer(rebasing: buffer[offset...]), descriptors: offset == 0 ? descriptors : [])
            }
            offset += n ?? 0
        }
    }

    func writeFrame(_ body: String, descriptors: [Int32] = []) throws {
        try write(FrameEncoder.frame(Array(body.utf8)), descriptors: descriptors)
    }

    func send(_ message: Message, descriptors: [Int32] = []) throws {
        try write(FrameEncoder.frame(message.encode()), descriptors: descriptors)
    }

    /// The next message from the connection, or nil if it closed the stream.
    func read(timeout: Int32 = 15000) async throws -> Message? {
        try await onThreadOfItsOwn { try self.readBlocking(timeout: timeout) }
    }

    /// Up to `count` messages, read on one thread (stops early at end of stream).
    func read(count: Int, timeout: Int32 = 15000) async throws -> [Message] {
        try await onThreadOfItsOwn {
            var messages: [Message] = []
            while messages.count < count, let message = try self.readBlocking(timeout: timeout) { messages.append(message) }
            return messages
        }
    }

    private func readBlocking(timeout: Int32) throws -> Message? {
        while true {
            if let frame = try decoder.nextFrame() { return try Message.decode(frame) }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, timeout) == 1 else { throw TestFailure("no message within \(timeout) ms") }
            var buffer = [UInt8](repeating: 0, count: 65536)
            let n = Glibc.read(fd, &buffer, buffer.count)
            if n <= 0 { return nil }
            decoder.append(buffer[0..<n])
        }
    }

    /// Completes the handshake as an initiator with the given role.
    func hello(role: Hello.Role = .driver, name: String = "raw", version: Int = Hello.currentVersion) async throws -> Message? {
        try send(.request(id: .number(0), method: "hello",
                          params: Hello(role: role, name: name, version: version).json, descriptorCount: 0))
        return try await read()
    }

    /// True once the connection has closed its end (read returns end of stream).
    func isClosedByPeer(timeout: Int32 = 15000) async throws -> Bool {
        while true {
            guard let _ = try await read(timeout: timeout) else { return true }
        }
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Collects protocol violations a connection reports, for assertions.
final class ViolationLog: Sendable {
    private let entries = Mutex<[RPCError]>([])
    var all: [RPCError] { entries.withLock { $0 } }
    func record(_ error: RPCError) { entries.withLock { $0.append(error) } }
}

import Synchronization

/// An acceptor connection (the supervisor side) on one end of a socketpair and a raw peer on the other.
func acceptorWithRawPeer(policy: ViolationPolicy = .reply, maximumFrameLength: Int = FrameDecoder.defaultMaximumFrameLength,
                         handlers: RPCHandlers = echoHandlers(), violations: ViolationLog = ViolationLog(),
                         configure: (inout ConnectionConfiguration) -> Void = { _ in }) async throws -> (Connection, RawPeer) {
    let (a, b) = try UnixSocket.pair()
    var configuration = ConnectionConfiguration(label: "test peer")
    configuration.violationPolicy = policy
    configuration.maximumFrameLength = maximumFrameLength
    configuration.onProtocolViolation = { violations.record($0) }
    configure(&configuration)
    let peer = RawPeer(fd: b)
    async let connection = Connection.open(socket: a, hello: Hello(role: .supervisor, name: "supervisor"),
                                           side: .acceptor(acceptingRoles: [.driver]), configuration: configuration, handlers: handlers)
    let reply = try await peer.hello()
    guard case .response(.number(0), _, _)? = reply else { throw TestFailure("handshake failed: \(String(describing: reply))") }
    return (try await connection, peer)
}

/// Two connected `Connection`s: a supervisor-side acceptor and a driver-side initiator.
func connectedPair(serverHandlers: RPCHandlers = echoHandlers(), clientHandlers: RPCHandlers = RPCHandlers(),
                   configure: (inout ConnectionConfiguration) -> Void = { _ in }) async throws -> (server: Connection, client: Connection) {
    let (a, b) = try UnixSocket.pair()
    var serverConfiguration = ConnectionConfiguration(label: "driver end")
    var clientConfiguration = ConnectionConfiguration(label: "supervisor")
    configure(&serverConfiguration)
    configure(&clientConfiguration)
    async let server = Connection.open(socket: a, hello: Hello(role: .supervisor, name: "mediarouted"),
                                       side: .acceptor(acceptingRoles: [.driver]), configuration: serverConfiguration, handlers: serverHandlers)
    async let client = Connection.open(socket: b, hello: Hello(role: .driver, name: "reference", identity: ["protocol": "org.mediaroute.reference"]),
                                       side: .initiator(), configuration: clientConfiguration, handlers: clientHandlers)
    return (try await server, try await client)
}

/// `echo` returns its params; `fail` throws the error it is asked for; `sleep` waits until cancelled.
func echoHandlers() -> RPCHandlers {
    var handlers = RPCHandlers()
    handlers.onRequest("echo") { request in RPCReply(.object(request.params)) }
    handlers.onRequest("fail") { request in
        throw RPCError(RPCError.Code(Int(request.params["code"]?.integerValue ?? 1)), request.params["message"]?.stringValue ?? "failed")
    }
    return handlers
}

/// A counter tasks on any thread can bump.
final class Counter: Sendable {
    private let value = Atomic<Int>(0)
    func increment() { value.add(1, ordering: .relaxed) }
    var count: Int { value.load(ordering: .relaxed) }
}
