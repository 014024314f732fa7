import AVSystemRouting
import Foundation
import MediaDevice
import MediaRouteIPC
import PrivateDaemons
@testable import MediaRouteSupervisor
import Testing
import TestSupport

/// A real supervisor serving its control socket, test-driver processes behind it, and apps
/// (AVSystemRouteController) connecting through that socket.
final class AppTestBed: @unchecked Sendable {
    let harness: SupervisorHarness
    var socket: String { harness.root + "/mediarouted.sock" }
    private var server: ControlServer?
    private(set) lazy var apps = AppControllers(socket: socket)
    var supervisor: Supervisor { harness.supervisor }

    private var consoles: [ConsoleProcess] = []

    /// Runs `body` on a fresh bed and always tears it down, whether `body` returns, throws or is cancelled.
    /// With `driver`, the bed is started with that test driver and its `devices` installed.
    static func run(driver: String? = nil, devices: [String] = [], _ body: (AppTestBed) async throws -> Void) async throws {
        let bed = try AppTestBed()
        try await withTearDown {
            if let driver {
                try bed.harness.addDriver(driver, devices: devices)
                try await bed.start()
            }
            try await body(bed)
        } tearDown: { await bed.tearDown() }
    }

    private init() throws { harness = try SupervisorHarness() }

    /// A program the test started, stopped with the bed.
    func adopt(_ console: ConsoleProcess) { consoles.append(console) }

    func start(mprisBusAddress: String? = nil, reconnectWindow: Duration = .zero) async throws {
        let supervisor = try await harness.start(mprisBusAddress: mprisBusAddress, reconnectWindow: reconnectWindow)
        server = try await ControlServer.start(path: socket, supervisor: supervisor, logger: harness.log.logger)
    }

    func controller(_ applicationIdentifier: String = "org.test.app", protocols: [String]) -> AVSystemRouteController {
        apps.make(applicationIdentifier, protocols: protocols)
    }

    /// Lets the drivers discover until `names` are in the picker, then closes the picker.
    func discover(_ names: Set<String>) async throws {
        let view = PickerView()
        let picker = await supervisor.openPicker { view.update($0) }
        try await harness.waitUntil("\(names) discovered") { names.isSubset(of: view.names()) }
        await supervisor.closePicker(picker.id)
    }

    /// The person picks a device: the operator's activation.
    @discardableResult
    func activate(_ device: String) async throws -> String {
        try await supervisor.activate(device) { _ in nil }.session
    }

    /// An app observing routes of org.test.alpha (and its route changes, if asked), and the route it
    /// sees once the person discovered and activated "Den TV".
    func appWithActiveRoute(_ applicationIdentifier: String = "org.test.app",
                            watchingChanges: Bool = false) async throws -> (AVSystemRouteController, AppRecorder, AVSystemRoute) {
        let device = "Den TV"
        let controller = controller(applicationIdentifier, protocols: ["org.test.alpha"])
        let recorder = AppRecorder()
        #expect(controller.addObserver(recorder))
        if watchingChanges { await recorder.watchChanges(of: controller) }
        try await discover([device])
        try await activate(device)
        try await eventually("route") { recorder.activeRoute != nil }
        return (controller, recorder, try #require(await recorder.activeRoute))
    }

    /// Waits for the main actor to see `condition`; on timeout, says what the supervisor logged.
    func eventually(_ what: String, seconds: Double = 20, _ condition: @escaping @MainActor () -> Bool) async throws {
        try await harness.waitUntil(what, seconds: seconds) { await MainActor.run { condition() } }
    }

    func tearDown() async {
        for console in consoles { await console.stop() }
        await apps.invalidateAll()
        server?.close()
        await harness.tearDown()
    }
}

/// An app's observer, data delegate and route-change watcher in one: records everything, in order.
@MainActor
final class AppRecorder: AVSystemRouteControllerObserver, AVSystemRouteDataDelegate {
    private(set) var events: [(AVSystemRouteEventReason, AVSystemRoute)] = []
    private(set) var received: [String] = []
    private(set) var changes: [AVSystemRouteChange] = []
    private var watcher: Task<Void, Never>?

    nonisolated init() {}

    func systemRouteController(_ controller: AVSystemRouteController, handle event: AVSystemRouteEvent) async -> Bool {
        events.append((event.reason, event.route))
        if event.reason == .activate { event.route.routeDataChannel.dataDelegate = self }
        return true
    }

    func dataChannel(_ channel: AVSystemRouteDataChannel, didReceive data: Data) {
        received.append(String(decoding: data, as: UTF8.self))
    }

    func watchChanges(of controller: AVSystemRouteController) {
        let stream = controller.routeChanges()
        watcher = Task { @MainActor in for await change in stream { self.changes.append(change) } }
    }

    var activeRoute: AVSystemRoute? { events.last { $0.0 == .activate }?.1 }
}

