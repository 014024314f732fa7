import CBenchBaseline
import Glibc
import MediaRouteIPC

/// `ipc-notify`: one-way notifications per second between two processes, against a raw C writer
/// (one write(2) per frame) and a reader that walks the length headers, on the same socketpair.
///
/// The line reports the time ratio (ours/baseline, lower is better); its target is the ratio at which
/// ours reaches the floor of 200,000 messages/s given this run's baseline.
struct IPCNotifyBenchmark {
    let messages: Int
    static let floor = 200_000.0

    func run() async throws {
        let params: JSONObject = ["seq": 0, "payload": .string(String(repeating: "n", count: 50))]
        let frame = FrameEncoder.frame(Message.notification(method: "sample", params: params, descriptorCount: 0).encode())
        print("ipc-notify: \(messages) notifications of \(frame.count) bytes")

        let baselinePeer = try PeerProcess(mode: "c-sink", argument: String(messages))
        var start = now()
        guard cbb_send_frames(baselinePeer.socket, frame, frame.count, messages) == 0 else { throw BenchmarkError("the C sender failed") }
        let baselineSeconds = Double(now() - start) / 1e9
        guard baselinePeer.finish() == .exited(0) else { throw BenchmarkError("the C reader failed") }
        let baselineRate = Double(messages) / baselineSeconds
        print("  raw C write/read: \(Int(baselineRate)) messages/s")

        let peer = try PeerProcess(mode: "ipc-sink")
        let connection = try await peer.connect()
        let messages = self.messages
        start = now()
        let received = try await Task(executorPreference: EventLoop.shared) {
            var params = params
            for i in 0..<messages {
                params["seq"] = .integer(Int64(i))
                try await connection.notify("sample", params)
            }
            // Answered only after every earlier notification was handled: frames are handled in order.
            return try await connection.request("drain").result.integerValue ?? -1
        }.value
        let oursSeconds = Double(now() - start) / 1e9
        await connection.close()
        _ = peer.process.waitForExit()
        guard received == Int64(messages) else { throw BenchmarkError("the peer received \(received) of \(messages) notifications") }
        let oursRate = Double(messages) / oursSeconds
        print("  MediaRouteIPC notify: \(Int(oursRate)) messages/s (floor \(Int(Self.floor)))")
        printResult("ipc-notify", ratio: baselineRate / oursRate, target: baselineRate / Self.floor)
    }
}
