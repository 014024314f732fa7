import Foundation
import MediaRouteIPC
import MediaRouteSupervisor
import MediaRouteWire
import PrivateDaemons
import ReferenceProtocol

/// `reference-latency`: with a real receiver on a private Avahi, the time from a picker opening (on a
/// fresh supervisor: the driver starts, browses, resolves) to the receiver being listed, against
/// `avahi-browse -r` seeing the same service from a standing start in the same run; and, for the
/// record, activation to an active route, and `play` to the receiver reporting playing.
struct ReferenceLatencyBenchmark {
    let iterations: Int

    func run() async throws {
        try await ReferenceStage.run { stage in
            print("reference-latency: \(iterations) runs each, one receiver on a private avahi-daemon (loopback)")
            var floor: [UInt64] = []
            for _ in 0..<iterations { floor.append(try await avahiBrowse(stage)) }
            let baseline = LatencySamples(floor)
            print(baseline.line("  avahi-browse -r, start to the receiver resolved"))

            var listed: [UInt64] = [], activated: [UInt64] = [], playing: [UInt64] = []
            for run in 0..<iterations {
                // A fresh supervisor each time: the picker's opening starts the driver, as after a boot.
                let supervisor = try await stage.supervisor(state: "state-\(run)")
                try await stage.whileRunning(supervisor) {
                    listed.append(try await stage.waitUntilListed(supervisor))
                    let activation = now()
                    _ = try await supervisor.activate(ReferenceStage.receiverName) { _ in nil }
                    activated.append(now() - activation)
                    let play = now()
                    let route = try await supervisor.startSession(ReferenceStage.receiverName, url: stage.media.url("tone.wav"))
                    playing.append(now() - play)
                    guard route.playback?.status.state == .playing else { throw BenchmarkError("the receiver did not report playing: \(route)") }
                    try await supervisor.stopSession(ReferenceStage.receiverName)
                    try await supervisor.deactivate(ReferenceStage.receiverName)
                }
            }
            let ours = LatencySamples(listed)
            print(ours.millisecondsLine("  picker open to the receiver listed (driver start included)"))
            print(LatencySamples(activated).millisecondsLine("  activation to the route active"))
            print(LatencySamples(playing).millisecondsLine("  play to the receiver reporting playing (fetch and probe included)"))
            printResult("reference-latency", ratio: ours.median / baseline.median, target: 3)
        }
    }

    /// Starts `avahi-browse -rp` and times it until the receiver's resolved line appears.
    private func avahiBrowse(_ stage: ReferenceStage) async throws -> UInt64 {
        let log = stage.root + "/avahi-browse.log"
        try? FileManager.default.removeItem(atPath: log)
        let start = now()
        let browse = try ConsoleProcess("/usr/bin/avahi-browse", ["-r", "-p", ReferenceProtocol.serviceType], environment: stage.avahi.environment, logPath: log)
        let deadline = ContinuousClock.now + .seconds(20)
        while !browse.output.split(separator: "\n").contains(where: { $0.hasPrefix("=") && $0.contains("Bench\\032TV") }) {
            if browse.process.exitIfEnded() != nil || ContinuousClock.now > deadline {
                await browse.stop()
                throw BenchmarkError("avahi-browse did not resolve the receiver within 20 s: \(browse.output)")
            }
            try? await Task.sleep(for: .microseconds(200))
        }
        let elapsed = now() - start
        await browse.stop()  // before the next run starts its own
        return elapsed
    }
}
