import Foundation
import Logging
import MediaRouteIPC
import MediaRouteSupervisor
import PrivateDaemons
import ReferenceProtocol

/// `reference-latency`: with a real receiver on a private Avahi, the time from a picker opening (on a
/// fresh supervisor: the driver starts, browses, resolves) to the receiver being listed, against
/// `avahi-browse -r` seeing the same service from a standing start in the same run; and, for the
/// record, activation to an active route, and `play` to the receiver reporting playing.
struct ReferenceLatencyBenchmark {
    let iterations: Int
    static let receiverName = "Bench TV"

    func run() async throws {
        let root = NSTemporaryDirectory() + "mediaroute-bench-reference-\(getpid())"
        try FileManager.default.createDirectory(atPath: root + "/media", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let avahi = try await PrivateAvahi()
        var receiver: ConsoleProcess?, media: MediaFileServer?
        do {
            try await MediaFileServer.makeTone(at: root + "/media/tone.wav", seconds: 30, title: "Bench Tone")
            media = try await MediaFileServer(directory: root + "/media")
            receiver = try ConsoleProcess(BenchmarkFiles.sibling("mediaroute-receiver"),
                                          ["--name", Self.receiverName, "--auth", "none", "--host", "127.0.0.1", "--state-dir", root + "/receiver"],
                                          environment: avahi.environment, logPath: root + "/receiver.log")
            try await receiver!.waitFor("announced as \"")
            try await measure(avahi, media!, root)
        } catch {
            await receiver?.stop()
            await media?.stop()
            await avahi.stop()
            throw error
        }
        await receiver?.stop()
        await media?.stop()
        await avahi.stop()
    }

    private func measure(_ avahi: PrivateAvahi, _ media: MediaFileServer, _ root: String) async throws {
        print("reference-latency: \(iterations) runs each, one receiver on a private avahi-daemon (loopback)")
        var floor: [UInt64] = []
        for _ in 0..<iterations { floor.append(try await avahiBrowse(avahi, root)) }
        let baseline = LatencySamples(floor)
        print(baseline.line("  avahi-browse -r, start to the receiver resolved"))

        try FileManager.default.createDirectory(atPath: root + "/drivers", withIntermediateDirectories: true)
        let manifest: JSONValue = [
            "protocol": "org.mediaroute.reference",
            "exportedType": ["identifier": "org.mediaroute.reference", "conformsTo": ["public.media-sharing-protocol"], "description": "MediaRoute"],
            "executable": .string(BenchmarkFiles.sibling("mediaroute-reference-driver")),
            "environment": .object(JSONObject(avahi.environment.map { (key: $0.key, value: .string($0.value)) })),
        ]
        try Data(JSONWriter.encode(manifest)).write(to: URL(fileURLWithPath: root + "/drivers/reference.json"))
        var logger = Logger(label: "bench")
        logger.logLevel = .critical

        var listed: [UInt64] = [], activated: [UInt64] = [], playing: [UInt64] = []
        for run in 0..<iterations {
            // A fresh supervisor each time: the picker's opening starts the driver, as after a boot.
            let supervisor = Supervisor(configuration: SupervisorConfiguration(driversDirectories: [root + "/drivers"], stateDirectory: root + "/state-\(run)"),
                                        logger: logger)
            try await supervisor.start()
            let seen = Flag()
            let start = now()
            let picker = await supervisor.openPicker { entries in if entries.contains(where: { $0.name == Self.receiverName }) { seen.set() } }
            while !seen.isSet { try await Task.sleep(for: .microseconds(200)) }
            listed.append(now() - start)
            await supervisor.closePicker(picker.id)

            let activation = now()
            _ = try await supervisor.activate(Self.receiverName) { _ in nil }
            activated.append(now() - activation)
            let play = now()
            let route = try await supervisor.startSession(Self.receiverName, url: media.url("tone.wav"))
            playing.append(now() - play)
            guard route.objectValue?["playback"]?.objectValue?["state"] == "playing" else { throw BenchmarkError("the receiver did not report playing: \(route)") }
            try await supervisor.stopSession(Self.receiverName)
            try await supervisor.deactivate(Self.receiverName)
            await supervisor.shutdown()
        }
        let ours = LatencySamples(listed)
        print(Self.milliseconds(ours, "  picker open to the receiver listed (driver start included)"))
        print(Self.milliseconds(LatencySamples(activated), "  activation to the route active"))
        print(Self.milliseconds(LatencySamples(playing), "  play to the receiver reporting playing (fetch and probe included)"))
        print("  listing ratio to the avahi-browse floor: \(format(ours.median / baseline.median))")
        printResult("reference-latency", ratio: ours.median / baseline.median, target: 3)
    }

    /// Starts `avahi-browse -rp` and times it until the receiver's resolved line appears.
    private func avahiBrowse(_ avahi: PrivateAvahi, _ root: String) async throws -> UInt64 {
        let log = root + "/avahi-browse.log"
        try? FileManager.default.removeItem(atPath: log)
        let start = now()
        let browse = try ConsoleProcess("/usr/bin/avahi-browse", ["-r", "-p", ReferenceProtocol.serviceType], environment: avahi.environment, logPath: log)
        while !browse.output.split(separator: "\n").contains(where: { $0.hasPrefix("=") && $0.contains("Bench\\032TV") }) {
            if browse.process.exitIfEnded() != nil { throw BenchmarkError("avahi-browse ended: \(browse.output)") }
            try? await Task.sleep(for: .microseconds(200))
        }
        let elapsed = now() - start
        await browse.stop()
        return elapsed
    }

    private static func milliseconds(_ samples: LatencySamples, _ label: String) -> String {
        "\(label): median \(format(samples.median / 1e6)) ms, p99 \(format(samples.p99 / 1e6)) ms (\(samples.sorted.count) samples)"
    }
}

/// Set once from any thread, read from another.
final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.withLock { value = true } }
    var isSet: Bool { lock.withLock { value } }
}
