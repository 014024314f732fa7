import CBenchBaseline
import Glibc
import MediaRouteIPC

/// The other process of a two-process benchmark: started by the benchmark itself with its socket
/// as descriptor 3 (`mediaroute-bench ARG --peer MODE`).
enum BenchmarkPeer {
    static let socket = ChildProcess.socketDescriptor

    static func run(mode: String, argument: String) async throws {
        switch mode {
        case "c-echo":
            exit(cbb_echo_frames(socket) >= 0 ? 0 : 1)
        case "c-sink":
            exit(cbb_receive_frames(socket, Int(argument) ?? 0) == 0 ? 0 : 1)
        case "ipc-echo", "ipc-sink":
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
        handlers.onRequest("echo") { RPCReply(.object($0.params)) }
        handlers.onNotification("sample") { _ in received.increment() }
        handlers.onRequest("drain") { _ in RPCReply(.integer(Int64(received.value))) }
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
        var path = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &path, path.count - 1)
        let executable = String(decoding: path[0..<max(n, 0)].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        process = try ChildProcess(executable: executable, arguments: [argument, "--peer", mode], socket: theirs)
        close(theirs)
        socket = mine
    }

    func finish() -> ChildProcess.Termination {
        close(socket)
        return process.waitForExit()
    }
}
