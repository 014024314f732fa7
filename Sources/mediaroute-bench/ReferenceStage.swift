import AVSystemRouting
import Foundation
import Logging
import MediaRouteIPC
import MediaRouteSupervisor
import PrivateDaemons
import ReferenceProtocol

/// What the reference-protocol benchmarks run on: a private Avahi daemon, one receiver on it
/// (announced, no pairing), media served over HTTP, and a drivers directory with the reference
/// driver. Everything is stopped by `tearDown`, also when a benchmark fails.
final class ReferenceStage: @unchecked Sendable {
    static let receiverName = "Bench TV"
    let root = NSTemporaryDirectory() + "mediaroute-bench-reference-\(getpid())"
    // Set up in order; `tearDown` stops whichever of them exist.
    private(set) var avahi: PrivateAvahi!
    private(set) var media: MediaFileServer!
    private(set) var receiver: ConsoleProcess!
    var drivers: String { root + "/drivers" }

    /// Runs `body` on a fresh stage and always tears it down, also when setting it up fails halfway.
    static func run<T>(receiverArguments: [String] = [], _ body: (ReferenceStage) async throws -> T) async throws -> T {
        let stage = ReferenceStage()
        return try await withTearDown {
            try await stage.setUp(receiverArguments: receiverArguments)
            return try await body(stage)
        } tearDown: {
            await stage.tearDown()
        }
    }

    private init() {}

    private func setUp(receiverArguments: [String]) async throws {
        try FileManager.default.createDirectory(atPath: root + "/media", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: drivers, withIntermediateDirectories: true)
        avahi = try await PrivateAvahi()
        try await MediaFileServer.makeTone(at: root + "/media/tone.wav", seconds: 30, title: "Bench Tone")
        media = try await MediaFileServer(directory: root + "/media")
        receiver = try ConsoleProcess(Executables.sibling("mediaroute-receiver"),
                                      ["--name", Self.receiverName, "--auth", "none", "--host", "127.0.0.1", "--state-dir", root + "/receiver"] + receiverArguments,
                                      environment: avahi.environment, logPath: root + "/receiver.log")
        try await receiver.waitFor("announced as \"")
        let manifest = ReferenceProtocol.driverManifest(executable: Executables.sibling("mediaroute-reference-driver"), environment: avahi.environment)
        try Data(JSONWriter.encode(manifest)).write(to: URL(fileURLWithPath: drivers + "/reference.json"))
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
        try await withTearDown(body) { await supervisor.shutdown() }
    }

    /// Opens a picker until the receiver is listed; returns how long that took.
    func waitUntilListed(_ supervisor: Supervisor) async throws -> UInt64 {
        try await timeUntilListed(supervisor, Self.receiverName) { entries in entries.contains { $0.name == Self.receiverName } }
    }

    private func tearDown() async {
        await receiver?.stop()
        await media?.stop()
        await avahi?.stop()
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

extension ReferenceStage {
    /// The receiver activated and its route as an app sees it: `body` gets the route of an app
    /// connected on a control socket of its own, which ends with the app's connection after it.
    func withAppRoute<T>(_ supervisor: Supervisor, _ body: (AVSystemRoute) async throws -> T) async throws -> T {
        let socket = root + "/mediarouted.sock"
        let server = try await ControlServer.start(path: socket, supervisor: supervisor, logger: .init(label: "bench"))
        let controller = AVSystemRouteController(configuration: .init(applicationIdentifier: "org.mediaroute.bench",
                                                                      supportedProtocols: [ReferenceProtocol.protocolID], socketPath: socket))
        defer {
            server.close()
            Task { await controller.invalidate() }
        }
        _ = try await waitUntilListed(supervisor)
        _ = try await supervisor.activate(ReferenceStage.receiverName) { _ in nil }
        guard controller.addObserver(RouteWaiter.shared) else { throw BenchmarkError("the app could not reach mediarouted") }
        let deadline = ContinuousClock.now + .seconds(10)
        while controller.activeRoutes.isEmpty {
            guard ContinuousClock.now < deadline else { throw BenchmarkError("the app never saw the route") }
            try await Task.sleep(for: .milliseconds(5))
        }
        return try await body(controller.activeRoutes[0])
    }
}
