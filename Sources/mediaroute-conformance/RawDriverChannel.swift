import Foundation
import Glibc
import MediaRouteIPC
import Synchronization

/// A driver spoken to byte by byte: the kit's side of the malformed half of the specification.
/// The handshake is done by hand (or left unanswered), then the kit writes whatever bytes it
/// likes, with or without descriptors, and reads what comes back with a bound on every wait.
/// Reads block on `poll`, on a thread of their own (never the cooperative pool's).
final class RawDriverChannel: Sendable {
    let launch: DriverLaunch
    private let decoder: Mutex<FrameDecoder>
    /// Set once the kit closed its end.
    private let closed = Mutex(false)

    /// What a read found.
    enum Read: Sendable, CustomStringConvertible {
        case message(Message)
        /// A frame whose body is not a JSON-RPC message, or a framing error in what the driver sent.
        case garbage(String)
        /// The driver closed its end (end of file) or the socket failed.
        case closed
        case nothing(Duration)

        var description: String {
            switch self {
            case .message(let message): "\(message)"
            case .garbage(let why): "an unreadable frame (\(why))"
            case .closed: "the end of the stream"
            case .nothing(let bound): "nothing within \(bound)"
            }
        }
    }

    /// Starts a driver, runs `body` with it, and always stops it by its PID.
    static func with<T: Sendable>(_ setup: KitSetup, _ body: (RawDriverChannel) async throws -> T) async throws -> T {
        let channel = RawDriverChannel(try await DriverLaunch.start(manifest: setup.manifest, stateDirectory: setup.stateDirectory,
                                                                   showOutput: setup.showDriverOutput))
        do {
            let result = try await body(channel)
            await channel.stop()
            return result
        } catch {
            await channel.stop()
            throw error
        }
    }

    private init(_ launch: DriverLaunch) {
        self.launch = launch
        decoder = Mutex(FrameDecoder())
    }

    var socket: Int32 { launch.socket }

    /// Reads the driver's `hello` and answers it with ours, announcing `maxFrameLength`.
    func handshake(maxFrameLength: Int = FrameDecoder.defaultMaximumFrameLength) async throws {
        let first = await read(within: .seconds(5))
        guard case .message(.request(let id, "hello", _, _)) = first else { throw KitError("the driver's first message was \(first), not a hello request") }
        let hello: JSONObject = ["version": 1, "role": "supervisor", "identity": ["name": "mediaroute-conformance"],
                                 "maxFrameLength": .integer(Int64(maxFrameLength)), "features": ["fd-passing"]]
        try send(Message.response(id: id, result: .object(hello), descriptorCount: 0))
        decoder.withLock { $0.maximumFrameLength = min(maxFrameLength, $0.maximumFrameLength) }
    }

    func send(_ message: Message, descriptors: [Int32] = []) throws {
        try send(bytes: FrameEncoder.frame(message.encode()), descriptors: descriptors)
    }

    /// Writes `bytes` as they are, `descriptors` with the first byte.
    func send(bytes: [UInt8], descriptors: [Int32] = []) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = try bytes[offset...].withUnsafeBytes { try UnixSocket.send(socket, $0, descriptors: offset == 0 ? descriptors : []) }
            guard let sent else {
                var ready = pollfd(fd: socket, events: Int16(POLLOUT), revents: 0)
                guard poll(&ready, 1, 5000) > 0 else { throw KitError("the driver took none of \(bytes.count) bytes for 5 s") }
                continue
            }
            offset += sent
        }
    }

    /// The next message from the driver, waiting at most `bound`.
    func read(within bound: Duration) async -> Read {
        let socket = self.socket
        return (try? await onThreadOfItsOwn { [self] () -> Read in
            let deadline = ContinuousClock.now + bound
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let frame: Result<ArraySlice<UInt8>?, FrameError> = decoder.withLock { decoder in Result { () throws(FrameError) in try decoder.nextFrame() } }
                switch frame {
                case .failure(let error): return .garbage("\(error)")
                case .success(let body?):
                    do { return .message(try Message.decode(body)) } catch { return .garbage("\(error)") }
                case .success(nil): break
                }
                let left = deadline - ContinuousClock.now
                guard left > .zero else { return .nothing(bound) }
                var ready = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
                let polled = poll(&ready, 1, Int32(clamping: max(1, left.milliseconds)))
                if polled < 0 && errno == EINTR { continue }
                guard polled > 0 else { continue }
                let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, Int32(MSG_CMSG_CLOEXEC)) }
                if count < 0 && (errno == EINTR || errno == EAGAIN) { continue }
                guard count > 0 else { return .closed }
                decoder.withLock { $0.append(buffer[..<count]) }
            }
        }) ?? .closed
    }

    /// Reads until an answer to `id`, or any error response, arrives, skipping notifications.
    func answer(to id: RequestID?, within bound: Duration) async -> Read {
        let deadline = ContinuousClock.now + bound
        while true {
            let read = await read(within: max(.zero, deadline - ContinuousClock.now))
            switch read {
            case .message(.response(let answered, _, _)) where answered == id: return read
            case .message(.errorResponse): return read
            case .message: continue
            default: return read
            }
        }
    }

    /// Closes the kit's end: the driver sees the end of the stream.
    func closeOurEnd() {
        let wasClosed = closed.withLock { closed in
            defer { closed = true }
            return closed
        }
        if !wasClosed { Glibc.close(socket) }
    }

    func stop() async {
        closeOurEnd()
        await launch.stop()
    }
}
