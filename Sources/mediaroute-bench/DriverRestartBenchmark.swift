import CBenchBaseline
import Foundation
import Logging
import MediaDevice
import MediaRouteIPC
import PrivateDaemons
import MediaRouteSupervisor
import Synchronization

/// `driver-restart`: `kill -9` of a driver until its successor is handshaken and discovering again
/// (its device back in the open picker), through the supervisor, against a raw C fork/exec of a
/// minimal peer that sends one frame.
struct DriverRestartBenchmark {
    let iterations: Int
    static let aim: Duration = .milliseconds(50)

    func run() async throws {
        let directory = NSTemporaryDirectory() + "mediaroute-bench-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory + "/drivers", withIntermediateDirectories: true)
        try BenchmarkFiles.writeTestDriverManifest(to: directory + "/drivers", protocolID: "org.bench.restart", devices: ["Bench TV"],
                                                   restart: ["intensity": 100_000, "periodSeconds": 1, "initialBackoffMilliseconds": 1, "maximumBackoffMilliseconds": 1])
        print("driver-restart: \(iterations) kill -9 / restart cycles (restart backoff set to 1 ms)")

        var baseline = [UInt64](repeating: 0, count: iterations)
        guard cbb_spawn_handshake(Executables.sibling("mediaroute-bench-peer"), Int32(iterations), &baseline) == 0 else {
            throw BenchmarkError("the C fork/exec baseline failed")
        }
        let base = LatencySamples(baseline)
        print(base.line("  raw C fork/exec + one-frame handshake"))

        var logger = Logger(label: "bench")
        logger.logLevel = .critical
        let supervisor = Supervisor(configuration: SupervisorConfiguration(driversDirectories: [directory + "/drivers"], stateDirectory: directory + "/state"),
                                    logger: logger)
        try await supervisor.start()
        let picker = await supervisor.openPicker { _ in }
        // Handshaken and discovering = running under a new pid with its device reported again.
        func restarted(from old: pid_t?) async -> pid_t? {
            guard let status = await supervisor.driverStatuses().first, status.state == .running, status.pid != old, status.deviceCount > 0 else { return nil }
            return status.pid
        }
        var pid: pid_t? = nil
        while pid == nil { pid = await restarted(from: nil) }
        var samples: [UInt64] = []
        for _ in 0..<iterations {
            let start = now()
            kill(pid!, SIGKILL)
            var next: pid_t? = nil
            while next == nil {
                try await Task.sleep(for: .microseconds(200))
                next = await restarted(from: pid)
            }
            samples.append(now() - start)
            pid = next
        }
        await supervisor.closePicker(picker.id)
        await supervisor.shutdown()
        let ours = LatencySamples(samples)
        print(ours.line("  mediarouted restart to rediscovery"))
        print("  restart under \(Self.aim.milliseconds) ms: \(ours.median < Double(Self.aim.milliseconds) * 1e6 ? "yes" : "no") (median \(format(ours.median / 1e6)) ms)")
        printResult("driver-restart", ratio: ours.median / base.median, target: Double(Self.aim.milliseconds) * 1e6 / base.median)
    }
}

/// Paths of the programs built beside the benchmark, and manifests for them.
enum BenchmarkFiles {

    static func writeTestDriverManifest(to directory: String, protocolID: String, devices: [String], restart: JSONObject = [:]) throws {
        let manifest: JSONValue = [
            "protocol": .string(protocolID),
            "exportedType": ["identifier": .string(protocolID), "conformsTo": ["public.media-sharing-protocol"], "description": .string(protocolID)],
            "executable": .string(Executables.sibling("mediaroute-testdriver")),
            "arguments": ["--protocol", .string(protocolID), "--devices", .string(devices.joined(separator: ","))],
            "restart": .object(restart), "environment": ["SWIFT_BACKTRACE": "enable=no"],
        ]
        try Data(JSONWriter.encode(manifest)).write(to: URL(fileURLWithPath: "\(directory)/\(protocolID).json"))
    }
}
