import CBenchBaseline
import Foundation
import Glibc
import MediaRouteIPC
import PrivateDaemons

/// The other process of a two-process benchmark: started by the benchmark itself with its socket
/// as descriptor 3 (`mediaroute-bench ARG --peer MODE`).
enum BenchmarkPeer {
    static let socket = ChildProcess.socketDescriptor

    /// For the echo modes, `argument` is the CPU to answer on ("-": wherever the scheduler likes).
    static func run(mode: String, argument: String) async throws {
        switch mode {
        case "c-echo", "c-epoll-echo":
            if let cpu = Int32(argument) { _ = cbb_run_on_cpu(cpu) }
            exit(cbb_echo_frames(socket, mode == "c-epoll-echo" ? 1 : 0) >= 0 ? 0 : 1)
        case "c-sink":
            exit(cbb_receive_frames(socket, Int(argument) ?? 0) == 0 ? 0 : 1)
        case "ipc-echo", "ipc-sink":
            if let cpu = Int32(argument) { EventLoop.shared.execute { _ = cbb_run_on_cpu(cpu) } }
            try await serve()
        default:
            fatalError("unknown peer mode \(mode)")  // only ever started by this program
        }
    }

    /// The supervisor's side: accepts the driver-role benchmark client, echoes requests, counts
    /// notifications, and exits when the client closes.
    private static func serve() async throws {
        let received = Counter()
        var handlers = RPCHandlers()
        handlers.onImmediateRequest("echo") { RPCReply(.object($0.params)) }
        handlers.onRequest("echo.task") { RPCReply(.object($0.params)) }
        handlers.onNotification("sample") { _ in received.increment() }
        handlers.onImmediateRequest("drain") { _ in RPCReply(.integer(Int64(received.value))) }
        // The consumer's end of a ring: read everything (copying each record out, as an encoder
        // would) until `bytes` have come, on a thread of its own.
        handlers.onRequest("ring.consume") { request in
            let ring = try SampleRing(descriptors: request.descriptors)
            let total = request.params["bytes"]?.integerValue ?? 0
            let records: Int = try await onThreadOfItsOwn {
                var buffer = [UInt8](repeating: 0, count: ring.maximumRecordSize)
                var read = 0, records = 0
                while read < total {
                    let got = try ring.read { payload, _ in
                        buffer.withUnsafeMutableBytes { $0.baseAddress!.copyMemory(from: payload.baseAddress!, byteCount: payload.count) }
                        read += payload.count
                        records += 1
                    }
                    if !got { _ = ring.waitForRecord(timeout: .seconds(1)) }
                }
                return records
            }
            return RPCReply(.integer(Int64(records)))
        }
        // Sleeps on the ring, and for each record measures from its timestamp to being awake with it.
        handlers.onRequest("ring.wakeups") { request in
            let ring = try SampleRing(descriptors: request.descriptors)
            let count = Int(request.params["count"]?.integerValue ?? 0)
            let samples: [UInt64] = try await onThreadOfItsOwn {
                var samples: [UInt64] = []
                while samples.count < count {
                    guard ring.waitForRecord(timeout: .seconds(2)) else { break }
                    _ = try ring.read { _, timestamp in samples.append(SampleRing.monotonicNow() - timestamp) }
                }
                return samples
            }
            return RPCReply(.array(samples.map { .integer(Int64($0)) }))
        }
        // The C baseline: a blocking read of an eventfd whose value is the time it was written.
        handlers.onRequest("eventfd.wakeups") { request in
            let fd = try request.descriptors.take(0), ack = try request.descriptors.take(1)
            let count = Int(request.params["count"]?.integerValue ?? 0)
            let samples: [UInt64] = try await onThreadOfItsOwn {
                defer { close(fd); close(ack) }
                var samples = [UInt64](repeating: 0, count: count)
                guard cbb_eventfd_reader(fd, ack, Int32(count), &samples) == 0 else { throw BenchmarkError("the eventfd reader failed") }
                return samples
            }
            return RPCReply(.array(samples.map { .integer(Int64($0)) }))
        }
        let connection = try await Connection.open(
            socket: socket, hello: Hello(role: .supervisor, name: "bench-peer"),
            side: .acceptor(acceptingRoles: [.driver]), configuration: ConnectionConfiguration(label: "benchmark client"),
            handlers: handlers)
        _ = await connection.waitUntilClosed()
        exit(0)
    }
}

/// Counts on the event loop thread only (notification handlers run there), read from it too.
final class Counter: @unchecked Sendable {
    var value = 0
    func increment() { value += 1 }
}

/// A benchmark peer process connected to us by a socketpair.
struct PeerProcess {
    let process: ChildProcess
    let socket: Int32

    init(mode: String, argument: String = "-") throws {
        let (mine, theirs) = try UnixSocket.pair()
        process = try ChildProcess(executable: Executables.current, arguments: [argument, "--peer", mode], socket: theirs)
        close(theirs)
        socket = mine
    }

    /// The IPC connection to a peer in an `ipc-*` mode, opened as a driver opens its own to mediarouted.
    func connect() async throws -> Connection {
        try await Connection.open(socket: socket, hello: Hello(role: .driver, name: "bench"), side: .initiator(),
                                  configuration: ConnectionConfiguration(label: "bench peer"))
    }

    func finish() -> ChildProcess.Termination {
        close(socket)
        return process.waitForExit()
    }
}
