import CBenchBaseline
import Glibc
import MediaRouteIPC

/// `ipc-rtt`: one ~100-byte request and its answer between two processes, through the IPC library,
/// against raw C blocking write/read ping-pong of the same frame over the same kind of socketpair.
///
/// Where the two processes run decides most of a round trip here (a wake-up on another core of a
/// VM costs several times a whole round trip on one), and the scheduler places a blocking pair and
/// an epoll pair differently. So both are measured twice with the same explicit placement: the two
/// sides on two cores (as a driver and mediarouted run) and on one core (the pure CPU cost).
/// Within a placement the measurements take turns, round by round: these VMs have slow and fast
/// minutes, and measured one after the other, whichever ran in a slow minute would lose.
///
/// The peer answers as the C echo does, at once (an immediate handler); the same echo answered from
/// a task of its own, as handlers that must wait are, is measured beside it and reported too.
struct IPCRoundTripBenchmark {
    let iterations: Int
    let warmup = 2_000
    let rounds = 10

    static let params: JSONObject = ["seq": 0, "payload": .string(String(repeating: "m", count: 28))]

    struct Placement {
        let label: String
        let client: Int32
        let peer: Int32
    }

    func run() async throws {
        let frame = FrameEncoder.frame(Message.request(id: .number(1), method: "echo", params: Self.params, descriptorCount: 0).encode())
        print("ipc-rtt: \(frame.count)-byte frames (header included), \(iterations) round trips after \(warmup) warm-up, in \(rounds) rounds taking turns")
        let twoCores = sysconf(Int32(_SC_NPROCESSORS_ONLN)) > 1
        let placements = (twoCores ? [Placement(label: "two cores", client: 0, peer: 1)] : []) + [Placement(label: "one core", client: 0, peer: 0)]
        var result: Double?  // the first placement's
        for placement in placements {
            let (baseline, eventDriven, ours, oursInTask) = try await measure(frame, placement)
            print("  \(placement.label) (client on CPU \(placement.client), peer on CPU \(placement.peer)):")
            print(baseline.line("    raw C socketpair ping-pong"))
            print(eventDriven.line("    (reference) the same in C, each side waiting in epoll_wait"))
            print(ours.line("    MediaRouteIPC request/response"))
            print(oursInTask.line("    (reference) the same, answered from a task"))
            let ratio = ours.median / baseline.median
            print("    median ratio \(format(ratio)), p99 ratio \(format(ours.p99 / baseline.p99)); answered from a task: \(format(oursInTask.median / baseline.median)); waiting in epoll alone: \(format(eventDriven.median / baseline.median))")
            result = result ?? ratio
        }
        printResult("ipc-rtt", ratio: result ?? 0, target: 1.5)
    }

    /// The C baseline, the C epoll reference and ours both ways, each C side with a peer of its own, in turns.
    private func measure(_ frame: [UInt8], _ placement: Placement) async throws -> (LatencySamples, LatencySamples, LatencySamples, LatencySamples) {
        let cpu = String(placement.peer)
        let blocking = try PeerProcess(mode: "c-echo", argument: cpu)
        let eventDriven = try PeerProcess(mode: "c-epoll-echo", argument: cpu)
        let ipc = try PeerProcess(mode: "ipc-echo", argument: cpu)
        let connection = try await ipc.connect()
        connection.loop.execute { _ = cbb_run_on_cpu(placement.client) }
        defer { connection.loop.execute { _ = cbb_run_on_cpu(-1) } }
        let client = RoundTripClient(connection: connection)
        let (perRound, warmupPerRound) = (max(1, iterations / rounds), warmup / rounds)
        var (baselineSamples, eventDrivenSamples, ourSamples, inTaskSamples): ([UInt64], [UInt64], [UInt64], [UInt64]) = ([], [], [], [])
        for _ in 0..<rounds {
            baselineSamples += try pingPongC(blocking.socket, eventDriven: false, frame, placement, perRound, warmupPerRound)
            eventDrivenSamples += try pingPongC(eventDriven.socket, eventDriven: true, frame, placement, perRound, warmupPerRound)
            try await withTaskExecutorPreference(connection.loop) {
                ourSamples += try await client.measure("echo", iterations: perRound, warmup: warmupPerRound)
                inTaskSamples += try await client.measure("echo.task", iterations: perRound, warmup: warmupPerRound)
            }
        }
        await connection.close()
        guard blocking.finish() == .exited(0), eventDriven.finish() == .exited(0) else { throw BenchmarkError("a C echo peer failed") }
        guard case .exited(0) = ipc.process.waitForExit() else { throw BenchmarkError("the IPC peer failed") }
        return (LatencySamples(baselineSamples), LatencySamples(eventDrivenSamples), LatencySamples(ourSamples), LatencySamples(inTaskSamples))
    }

    /// The raw C ping-pong: blocking reads and writes (the baseline), or each side waiting in epoll
    /// as an event loop does (a reference: what readiness-based waiting alone costs on this machine).
    /// Pinned here, each time: the task may resume on another thread between rounds.
    private func pingPongC(_ socket: Int32, eventDriven: Bool, _ frame: [UInt8], _ placement: Placement,
                           _ count: Int, _ warmup: Int) throws -> [UInt64] {
        var samples = [UInt64](repeating: 0, count: warmup + count)
        _ = cbb_run_on_cpu(placement.client)
        defer { _ = cbb_run_on_cpu(-1) }
        guard cbb_ping_pong(socket, eventDriven ? 1 : 0, frame, frame.count, Int32(samples.count), &samples) == 0 else {
            throw BenchmarkError("the C ping-pong failed")
        }
        return Array(samples[warmup...])
    }
}

/// The calling side, an actor on the connection's loop as the supervisor is, called from a task
/// preferring that loop as the supervisor's tasks do: a request and the answer that resumes it stay
/// on the thread that reads the socket.
private actor RoundTripClient {
    let connection: Connection
    nonisolated var unownedExecutor: UnownedSerialExecutor { connection.loop.asUnownedSerialExecutor() }

    init(connection: Connection) { self.connection = connection }

    func measure(_ method: String, iterations: Int, warmup: Int) async throws -> [UInt64] {
        var samples: [UInt64] = []
        samples.reserveCapacity(iterations)
        var params = IPCRoundTripBenchmark.params
        for i in 0..<(warmup + iterations) {
            params["seq"] = .integer(Int64(i))
            let start = now()
            let reply = try await connection.request(method, params)
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
