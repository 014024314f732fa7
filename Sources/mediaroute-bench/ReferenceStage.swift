import Foundation
import Logging
import MediaRouteIPC
import MediaRouteSupervisor
import PrivateDaemons

/// What the reference-protocol benchmarks run on: a private Avahi daemon, one receiver on it
/// (announced, no pairing), media served over HTTP, and a drivers directory with the reference
/// driver. Everything is stopped by `tearDown`, also when a benchmark fails.
final class ReferenceStage: @unchecked Sendable {
    static let receiverName = "Bench TV"
    let root: String
    let avahi: PrivateAvahi
    let media: MediaFileServer
    let receiver: ConsoleProcess
    var drivers: String { root + "/drivers" }

    /// Runs `body` on a fresh stage and always tears it down.
    static func run<T>(receiverArguments: [String] = [], _ body: (ReferenceStage) async throws -> T) async throws -> T {
        let stage = try await ReferenceStage(receiverArguments: receiverArguments)
        do {
            let result = try await body(stage)
            await stage.tearDown()
            return result
        } catch {
            await stage.tearDown()
            throw error
        }
    }

    private init(receiverArguments: [String]) async throws {
        let root = NSTemporaryDirectory() + "mediaroute-bench-reference-\(getpid())"
        self.root = root
        let removeRoot = { try? FileManager.default.removeItem(atPath: root) }
        do {
            try FileManager.default.createDirectory(atPath: root + "/media", withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: root + "/drivers", withIntermediateDirectories: true)
            avahi = try await PrivateAvahi()
        } catch {
            removeRoot()
            throw error
        }
        do {
            try await MediaFileServer.makeTone(at: root + "/media/tone.wav", seconds: 30, title: "Bench Tone")
            media = try await MediaFileServer(directory: root + "/media")
        } catch {
            await avahi.stop()
            removeRoot()
            throw error
        }
        do {
            receiver = try ConsoleProcess(BenchmarkFiles.sibling("mediaroute-receiver"),
                                          ["--name", Self.receiverName, "--auth", "none", "--host", "127.0.0.1", "--state-dir", root + "/receiver"] + receiverArguments,
                                          environment: avahi.environment, logPath: root + "/receiver.log")
        } catch {
            await media.stop()
            await avahi.stop()
            removeRoot()
            throw error
        }
        do {
            try await receiver.waitFor("announced as \"")
            let manifest: JSONValue = [
                "protocol": "org.mediaroute.reference",
                "exportedType": ["identifier": "org.mediaroute.reference", "conformsTo": ["public.media-sharing-protocol"], "description": "MediaRoute"],
                "executable": .string(BenchmarkFiles.sibling("mediaroute-reference-driver")),
                "environment": .object(JSONObject(avahi.environment.map { (key: $0.key, value: .string($0.value)) })),
            ]
            try Data(JSONWriter.encode(manifest)).write(to: URL(fileURLWithPath: root + "/drivers/reference.json"))
        } catch {
            await receiver.stop()
            await media.stop()
            await avahi.stop()
            removeRoot()
            throw error
        }
    }

    /// A supervisor over the reference driver, quiet, with its state in `state`.
    func supervisor(state: String) async throws -> Supervisor {
        var logger = Logger(label: "bench")
        logger.logLevel = .critical
        let supervisor = Supervisor(configuration: SupervisorConfiguration(driversDirectories: [drivers], stateDirectory: root + "/" + state), logger: logger)
        try await supervisor.start()
        return supervisor
    }

    /// Runs `body` and shuts `supervisor` (and its driver) down, also when `body` fails.
    func whileRunning(_ supervisor: Supervisor, _ body: () async throws -> Void) async throws {
        do {
            try await body()
            await supervisor.shutdown()
        } catch {
            await supervisor.shutdown()
            throw error
        }
    }

    /// Opens a picker until the receiver is listed; returns how long that took.
    func waitUntilListed(_ supervisor: Supervisor) async throws -> UInt64 {
        let seen = Flag()
        let start = now()
        let picker = await supervisor.openPicker { entries in if entries.contains(where: { $0.name == Self.receiverName }) { seen.set() } }
        let deadline = ContinuousClock.now + .seconds(20)
        while !seen.isSet {
            guard ContinuousClock.now < deadline else { throw BenchmarkError("\(Self.receiverName) was not discovered within 20 s") }
            try await Task.sleep(for: .microseconds(200))
        }
        let elapsed = now() - start
        await supervisor.closePicker(picker.id)
        return elapsed
    }

    func tearDown() async {
        await receiver.stop()
        await media.stop()
        await avahi.stop()
        try? FileManager.default.removeItem(atPath: root)
    }
}

/// Set once from any thread, read from another.
final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.withLock { value = true } }
    var isSet: Bool { lock.withLock { value } }
}
