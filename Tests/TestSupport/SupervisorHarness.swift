import Foundation
import Logging
import MediaRouteIPC
import PrivateDaemons
import MediaRouteSupervisor
import Synchronization
import Testing

/// Collects log lines, for asserting what the supervisor told the operator.
public final class LogCapture: Sendable {
    private let lines = Mutex<[String]>([])
    public init() {}
    public var all: [String] { lines.withLock { $0 } }
    public func contains(_ text: String) -> Bool { all.contains { $0.contains(text) } }

    public var logger: Logger {
        Logger(label: "mediarouted") { _ in Handler(capture: self) }
    }

    struct Handler: LogHandler {
        let capture: LogCapture
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            capture.lines.withLock { $0.append("\(event.level) \(event.message)") }
        }
    }
}

/// A drivers directory of test-driver manifests, a state directory, and a supervisor over them.
public final class SupervisorHarness: @unchecked Sendable {
    public let root: String
    public var drivers: String { root + "/drivers" }
    public var state: String { root + "/state" }
    public let log = LogCapture()
    public private(set) var supervisor: Supervisor!

    public static let testDriver = Executables.sibling("mediaroute-testdriver")

    public init() throws {
        root = NSTemporaryDirectory() + "mediaroute-supervisor-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: root + "/drivers", withIntermediateDirectories: true)
    }

    /// Writes a manifest for the test driver. `claims` is what it says in the handshake.
    public func addDriver(_ protocolID: String, devices: [String] = [], claims: String? = nil, flags: [String] = [],
                   identifier: String? = nil, conformsTo: [String] = ["public.media-sharing-protocol"],
                   restart: JSONObject = ["intensity": 5, "periodSeconds": 60, "initialBackoffMilliseconds": 20, "maximumBackoffMilliseconds": 200],
                   timeouts: JSONObject = ["heartbeatIntervalMilliseconds": 1000, "heartbeatTimeoutMilliseconds": 2000, "requestMilliseconds": 5000]) throws {
        var arguments: [JSONValue] = ["--protocol", .string(claims ?? protocolID)]
        if !devices.isEmpty { arguments += ["--devices", .string(devices.joined(separator: ","))] }
        arguments += flags.map { .string($0) }
        let manifest: JSONValue = [
            "protocol": .string(protocolID),
            "exportedType": ["identifier": .string(identifier ?? protocolID), "conformsTo": .array(conformsTo.map { .string($0) }),
                             "description": .string("Test \(protocolID.split(separator: ".").last ?? "")")],
            "executable": .string(Self.testDriver), "arguments": .array(arguments),
            "restart": .object(restart), "timeouts": .object(timeouts),
            // These drivers crash on purpose, many at once: symbolicating each backtrace would
            // cost seconds of CPU on two cores.
            "environment": ["SWIFT_BACKTRACE": "enable=no"],
        ]
        try Data(JSONWriter.encode(manifest)).write(to: URL(fileURLWithPath: "\(drivers)/\(protocolID).json"))
    }

    public static let testRemoteExtension = Executables.sibling("mediaroute-test-remote-extension")

    /// Writes a manifest for the test NowPlaying extension making `application`'s remote sessions;
    /// it logs the commands it takes to `commandLog` (its "device").
    public func addRemoteExtension(application: String, identifier: String = "org.test.nowplaying", commandLog: String? = nil,
                                   environment: [String: String] = [:], idleExitMilliseconds: Int = 30_000, executable: String? = nil) throws {
        var variables: [String: String] = ["SWIFT_BACKTRACE": "enable=no", "COMMAND_LOG": commandLog ?? root + "/commands.log"]
        variables.merge(environment) { $1 }
        let manifest: JSONValue = [
            "extensionPoint": "org.mediaroute.nowplaying.remote-media", "identifier": .string(identifier), "application": .string(application),
            "description": "Test remote sessions", "executable": .string(executable ?? Self.testRemoteExtension),
            "restart": ["intensity": 5, "periodSeconds": 60, "initialBackoffMilliseconds": 20, "maximumBackoffMilliseconds": 200],
            // Roomy: a push's start waits for the extension, which the suite's first seconds (a
            // hundred tests starting at once on two cores) once kept from answering in time (500).
            "timeouts": ["heartbeatIntervalMilliseconds": 1000, "heartbeatTimeoutMilliseconds": 5000, "requestMilliseconds": 15000,
                         "idleExitMilliseconds": .integer(Int64(idleExitMilliseconds))],
            "environment": .object(JSONObject(variables.sorted { $0.key < $1.key }.map { (key: $0.key, value: .string($0.value)) })),
        ]
        try Data(JSONWriter.encode(manifest)).write(to: URL(fileURLWithPath: "\(drivers)/\(identifier).json"))
    }

    @discardableResult
    /// `reconnectWindow` is zero unless a test asks: a device that goes away ends its route at once.
    public func start(discoveryOnDemand: Duration = .seconds(5), mprisBusAddress: String? = nil,
                      pushListenAddress: PushListenAddress? = nil, reconnectWindow: Duration = .zero) async throws -> Supervisor {
        let configuration = SupervisorConfiguration(driversDirectories: [drivers], stateDirectory: state, discoveryOnDemand: discoveryOnDemand,
                                                    mprisBusAddress: mprisBusAddress, pushListenAddress: pushListenAddress,
                                                    reconnectWindow: reconnectWindow)
        let supervisor = Supervisor(configuration: configuration, logger: log.logger)
        try await supervisor.start()
        self.supervisor = supervisor
        return supervisor
    }

    /// Starts the supervisor and serves its control socket at `socket`, for apps and the CLI.
    public func startServing(at socket: String, mprisBusAddress: String? = nil, reconnectWindow: Duration = .zero) async throws -> ControlServer {
        try await start(mprisBusAddress: mprisBusAddress, reconnectWindow: reconnectWindow)
        return try await ControlServer.start(path: socket, supervisor: supervisor, logger: log.logger)
    }

    /// Waits like the free `waitUntil`, and on timeout says what the supervisor saw: every driver's
    /// status and the last log lines.
    public func waitUntil(_ what: String, seconds: Double = 20, _ condition: () async -> Bool) async throws {
        do {
            try await TestSupport.waitUntil(what, seconds: seconds, condition)
        } catch {
            let statuses = await supervisor.driverStatuses().map { "\($0.protocolID): \($0.state), restarts \($0.restarts), last exit \($0.lastExit ?? "-")" }
            throw TestTimeout(what: what + "\n  " + statuses.joined(separator: "\n  ") + "\n  log:\n    " + log.all.suffix(15).joined(separator: "\n    "))
        }
    }

    /// Waits until a picker's latest list (kept by `view`) is exactly `names`.
    public func waitForPicker(_ view: PickerView, _ names: Set<String>, seconds: Double = 20) async throws {
        try await waitUntil("picker shows \(names.sorted())", seconds: seconds) { view.names() == names }
    }

    /// Tells a running test driver to misbehave.
    public func command(_ protocolID: String, _ word: String) throws {
        // Atomically (a temporary file renamed into place): the driver polls and must never see it half written.
        try Data(word.utf8).write(to: URL(fileURLWithPath: "\(state)/drivers/\(protocolID)/command"), options: .atomic)
    }

    /// Creates the file the test driver's `hold:NAME` waits for.
    public func release(_ protocolID: String) throws {
        try Data().write(to: URL(fileURLWithPath: "\(state)/drivers/\(protocolID)/release"))
    }

    public func status(_ protocolID: String) async -> DriverStatus? {
        await supervisor.driverStatuses().first { $0.protocolID == protocolID }
    }

    /// A harness for `body`, torn down afterwards whether `body` returns or throws.
    public static func run(_ body: (SupervisorHarness) async throws -> Void) async throws {
        let harness = try SupervisorHarness()
        try await withTearDown { try await body(harness) } tearDown: { await harness.tearDown() }
    }

    /// Processes the test saw that must not outlive the supervisor (a driver replaced by a restart).
    private var formerDrivers: [Int32] = []
    public func mustBeGone(_ pids: Int32...) { formerDrivers += pids }

    /// Stops the supervisor and checks that no driver it started is left running.
    public func tearDown() async {
        if let supervisor {
            let running = await supervisor.driverStatuses().compactMap(\.pid)
            await supervisor.shutdown()
            for pid in running + formerDrivers { #expect(kill(pid, 0) != 0, "driver pid \(pid) still running") }
        }
        try? FileManager.default.removeItem(atPath: root)
    }
}

/// Polls `condition` every 10 ms for up to `seconds`.
public func waitUntil(_ what: String = "condition", seconds: Double = 20, _ condition: () async -> Bool) async throws {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while ContinuousClock.now < deadline {
        if await condition() { return }
        try await Task.sleep(for: .milliseconds(10))
    }
    throw TestTimeout(what: what)
}

public struct TestTimeout: Error, CustomStringConvertible {
    public let what: String
    public init(what: String) { self.what = what }
    public var description: String { "\(what): not met in time" }
}

/// A picker's latest list, kept by its change callback.
public final class PickerView: Sendable {
    private let entries = Mutex<[PickerEntry]>([])
    public init() {}
    public var current: [PickerEntry] { entries.withLock { $0 } }
    public func update(_ list: [PickerEntry]) { entries.withLock { $0 = list } }
    public func names() -> Set<String> { Set(current.map(\.name)) }
}
