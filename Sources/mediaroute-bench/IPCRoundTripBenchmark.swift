import CBenchBaseline
import Glibc
import MediaRouteIPC

/// `ipc-rtt`: one ~100-byte request and its answer between two processes, through the IPC library,
/// against raw C blocking write/read ping-pong of the same frame over the same kind of socketpair.
struct IPCRoundTripBenchmark {
    let iterations: Int
    let warmup = 2_000

    static let params: JSONObject = ["seq": 0, "payload": .string(String(repeating: "m", count: 28))]

    func run() async throws {
        let frame = FrameEncoder.frame(Message.request(id: .number(1), method: "echo", params: Self.params, descriptorCount: 0).encode())
        print("ipc-rtt: \(frame.count)-byte frames (header included), \(iterations) round trips after \(warmup) warm-up")

        let baseline = try measureBaseline(frame)
        print(baseline.line("  raw C socketpair ping-pong"))
        let ours = try await measureOurs()
        print(ours.line("  MediaRouteIPC request/response"))
        let ratio = ours.median / baseline.median
        print("  median ratio \(format(ratio)), p99 ratio \(format(ours.p99 / baseline.p99))")
        printResult("ipc-rtt", ratio: ratio, target: 1.5)
    }

    private func measureBaseline(_ frame: [UInt8]) throws -> LatencySamples {
        let peer = try PeerProcess(mode: "c-echo")
        var samples = [UInt64](repeating: 0, count: warmup + iterations)
        let rc = cbb_ping_pong(peer.socket, frame, frame.count, Int32(samples.count), &samples)
        guard rc == 0, peer.finish() == .exited(0) else { throw BenchmarkError("the C ping-pong failed") }
        return LatencySamples(Array(samples[warmup...]))
    }

    private func measureOurs() async throws -> LatencySamples {
        let peer = try PeerProcess(mode: "ipc-echo")
        let connection = try await Connection.open(socket: peer.socket, hello: Hello(role: .driver, name: "bench"),
                                                   side: .initiator(), configuration: ConnectionConfiguration(label: "bench peer"))
        let client = RoundTripClient(connection: connection)
        let (iterations, warmup) = (self.iterations, self.warmup)
        let samples = try await client.measure(iterations: iterations, warmup: warmup)
        await connection.close()
        guard case .exited(0) = peer.process.waitForExit() else { throw BenchmarkError("the IPC peer failed") }
        return LatencySamples(samples)
    }
}

/// The calling side, an actor on the connection's loop as the supervisor is: a request and the
/// answer that resumes it stay on the thread that reads the socket.
private actor RoundTripClient {
    let connection: Connection
    nonisolated var unownedExecutor: UnownedSerialExecutor { connection.loop.asUnownedSerialExecutor() }

    init(connection: Connection) { self.connection = connection }

    func measure(iterations: Int, warmup: Int) async throws -> [UInt64] {
        var samples: [UInt64] = []
        samples.reserveCapacity(iterations)
        var params = IPCRoundTripBenchmark.params
        for i in 0..<(warmup + iterations) {
            params["seq"] = .integer(Int64(i))
            let start = now()
            let reply = try await connection.request("echo", params)
            let elapsed = now() - start
            guard reply.result.objectValue?["seq"] == .integer(Int64(i)) else { throw BenchmarkError("wrong echo") }
            if i >= warmup { samples.append(elapsed) }
        }
        return samples
    }
}

struct BenchmarkError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
