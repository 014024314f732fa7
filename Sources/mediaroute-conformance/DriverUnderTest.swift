import Foundation
import MediaRouteIPC
import MediaRouteSupervisor
import MediaRouteWire
import Synchronization

/// A driver started from its manifest and handshaken as `mediarouted` handshakes one: our
/// `Connection` as the acceptor, taking role `driver`, its identity checked against the manifest
/// by the supervisor's own rule (`DriverManifest.check`). Its notifications go to `events`; any
/// protocol violation the connection sees goes to `violations`.
final class DriverUnderTest: Sendable {
    let launch: DriverLaunch
    let connection: Connection
    let events: DriverEventLog
    let peer: Hello
    private let violationSink: ViolationSink

    /// Every notification a driver may send (IPC/README.md §11.2).
    static let notificationMethods = [
        "device.found", "device.lost", "devices.updated", "discovery.failed", "device.activated", "device.activationFailed",
        "device.pairingRequested", "device.deactivated", "session.started", "session.failed", "playback.state", "volume.changed",
        "session.dataToApplication", "session.remoteCommand", "stream.failed",
    ]

    private init(launch: DriverLaunch, connection: Connection, events: DriverEventLog, peer: Hello, violations: ViolationSink) {
        self.launch = launch
        self.connection = connection
        self.events = events
        self.peer = peer
        self.violationSink = violations
    }

    /// Starts the driver and completes the handshake; the error says why it could not (the driver
    /// is stopped then).
    static func start(_ setup: KitSetup, helloDelay: Duration = .zero) async throws -> DriverUnderTest {
        let launch = try await DriverLaunch.start(manifest: setup.manifest, stateDirectory: setup.stateDirectory, showOutput: setup.showDriverOutput)
        let events = DriverEventLog()
        let violations = ViolationSink()
        var handlers = RPCHandlers()
        for method in notificationMethods {
            // Handlers run on the connection's loop, inside its handling of what was read: the
            // count of unanswered requests is read in wire order with the answers.
            handlers.onNotification(method) { notification in
                let unanswered = notification.connection.assumeIsolated { $0.pendingRequestCount }
                events.append(method: method, params: notification.params, unansweredRequests: unanswered)
            }
        }
        var configuration = ConnectionConfiguration(label: "driver \(setup.manifest.protocolID) (pid \(launch.pid))")
        configuration.acceptHello = { hello throws(RPCError) in try setup.manifest.check(hello.identity) }
        configuration.defaultRequestTimeout = setup.manifest.timeouts.request
        configuration.onProtocolViolation = { violations.add($0.description) }
        do {
            if helloDelay > .zero { try await Task.sleep(for: helloDelay) }
            let connection = try await Connection.open(socket: launch.socket, hello: Hello(role: .supervisor, name: "mediaroute-conformance"),
                                                       side: .acceptor(acceptingRoles: [.driver]), configuration: configuration, handlers: handlers)
            guard let peer = await connection.peer else { throw KitError("the handshake completed without the driver's hello") }
            return DriverUnderTest(launch: launch, connection: connection, events: events, peer: peer, violations: violations)
        } catch {
            await launch.stop()
            throw error
        }
    }

    /// Starts a driver, runs `body` with it, and always closes and stops it.
    static func with<T: Sendable>(_ setup: KitSetup, helloDelay: Duration = .zero, _ body: (DriverUnderTest) async throws -> T) async throws -> T {
        let driver = try await start(setup, helloDelay: helloDelay)
        do {
            let result = try await body(driver)
            await driver.stop()
            return result
        } catch {
            await driver.stop()
            throw error
        }
    }

    /// What the connection found wrong in what the driver sent (§8), as sentences.
    var violations: [String] { violationSink.log.withLock { $0 } }

    /// Sends a typed request with the manifest's request timeout.
    func call<Request: WireRequest>(_ request: Request, descriptors: [Int32] = [], timeout: Duration? = nil) async throws -> Request.Result {
        try await connection.call(request, descriptors: descriptors, timeout: timeout)
    }

    /// Sends `request` (the only request of the kit in flight) and returns its result with the mark
    /// of the first event the driver sent after the answer: every notification from that mark on
    /// came after the answer on the wire, also one that arrived in the same read as the answer
    /// (before this call returned).
    func callMarkingAnswer<Request: WireRequest>(_ request: Request) async throws -> (result: Request.Result, afterAnswer: Int) {
        let unansweredBefore = await connection.pendingRequestCount
        let before = events.mark
        let result = try await call(request)
        let returned = events.mark
        // Events that came while the request was unanswered saw one more request in flight.
        let afterAnswer = events.events(from: before).first { $0.unansweredRequests <= unansweredBefore }?.index ?? returned
        return (result, min(afterAnswer, returned))
    }

    /// Closes our end and stops the process by its PID.
    func stop() async {
        await connection.close()
        _ = await launch.exit(within: .seconds(2))
    }
}

/// Collects violation sentences from the connection's callback (any thread).
private final class ViolationSink: Sendable {
    let log = Mutex<[String]>([])
    func add(_ sentence: String) { log.withLock { $0.append(sentence) } }
}

/// A failure of the kit's own making (setup, a driver that cannot be started), as a sentence.
struct KitError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
