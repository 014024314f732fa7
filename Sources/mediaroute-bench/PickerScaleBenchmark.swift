import CBenchBaseline
import Foundation
import MediaRouteIPC
import PrivateDaemons

/// `picker-scale`: 10 drivers of 100 devices each behind a real mediarouted; how long
/// `mediaroute devices --json` takes to list all 1,000 (cold: drivers start; warm: already
/// discovering), and the daemon's resident memory. Baseline: `mediaroute drivers --json`, the
/// same CLI round trip with almost nothing to list.
struct PickerScaleBenchmark {
    let runs: Int
    static let drivers = 10, devicesPerDriver = 100

    func run() async throws {
        let directory = NSTemporaryDirectory() + "mediaroute-bench-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory + "/drivers", withIntermediateDirectories: true)
        for d in 0..<Self.drivers {
            try BenchmarkFiles.writeTestDriverManifest(to: directory + "/drivers", protocolID: "org.bench.scale\(d)",
                                                       devices: (0..<Self.devicesPerDriver).map { "Room \(d)-\($0)" })
        }
        let socket = directory + "/mediarouted.sock"
        let log = open(directory + "/daemon.log", O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        let daemon = try ChildProcess(executable: Executables.sibling("mediarouted"),
                                      arguments: ["--drivers-dir", directory + "/drivers", "--state-dir", directory + "/state", "--socket", socket, "--log-level", "warning", "--no-mpris"],
                                      standardError: log)
        close(log)
        defer {
            kill(daemon.pid, SIGTERM)
            _ = daemon.waitForExit()
        }
        while (try? UnixSocket.connect(path: socket)).map({ close($0) }) == nil { usleep(2000) }
        let total = Self.drivers * Self.devicesPerDriver
        print("picker-scale: \(Self.drivers) drivers x \(Self.devicesPerDriver) devices, through mediarouted and the mediaroute CLI")

        let cold = try timeCLI(["devices", "--json", "--until", String(total), "--wait", "60"], socket: socket, expecting: total)
        print("  cold (10 drivers start and discover): \(format(Double(cold) / 1e6)) ms")
        var warm: [UInt64] = [], baseline: [UInt64] = []
        for _ in 0..<runs {
            warm.append(try timeCLI(["devices", "--json", "--until", String(total), "--wait", "60"], socket: socket, expecting: total))
            baseline.append(try timeCLI(["drivers", "--json"], socket: socket, expecting: nil))
        }
        let ours = LatencySamples(warm), base = LatencySamples(baseline)
        print("  warm `devices --json` listing \(total): median \(format(ours.median / 1e6)) ms, p99 \(format(ours.p99 / 1e6)) ms")
        print("  baseline `drivers --json`: median \(format(base.median / 1e6)) ms, p99 \(format(base.p99 / 1e6)) ms")
        print("  mediarouted resident memory with \(total) devices: \(Self.residentKiB(daemon.pid) / 1024) MiB")
        printResult("picker-scale", ratio: ours.median / base.median, target: 3)
    }

    /// Runs the CLI and returns its wall time; checks the number of devices it listed.
    private func timeCLI(_ arguments: [String], socket: String, expecting count: Int?) throws -> UInt64 {
        let output = NSTemporaryDirectory() + "mediaroute-bench-out-\(getpid())"
        defer { unlink(output) }
        let fd = open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw BenchmarkError("cannot write \(output): \(String(cString: strerror(errno)))") }
        let start = now()
        let cli = try ChildProcess(executable: Executables.sibling("mediaroute"), arguments: ["--socket", socket] + arguments, standardOutput: fd)
        close(fd)
        guard cli.waitForExit() == .exited(0) else { throw BenchmarkError("mediaroute \(arguments.joined(separator: " ")) failed") }
        let elapsed = now() - start
        if let count {
            let listed = (try? JSONReader.parse(Array(FileManager.default.contents(atPath: output) ?? Data())))?.arrayValue?.count ?? 0
            guard listed == count else { throw BenchmarkError("devices listed \(listed) of \(count)") }
        }
        return elapsed
    }

    static func residentKiB(_ pid: pid_t) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return 0 }
        return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
    }
}
