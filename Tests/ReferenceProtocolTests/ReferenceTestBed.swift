import AVSystemRouting
import Foundation
import MediaDevice
import MediaRouteIPC
@testable import MediaRouteSupervisor
import PrivateDaemons
import ReferenceProtocol
import Testing
import TestSupport

/// Everything the reference protocol runs on, for real: a private Avahi daemon (its own network
/// namespace), receivers announced through it, media served over HTTP, and the supervisor running
/// the reference driver, serving apps on its socket.
final class ReferenceTestBed: @unchecked Sendable {
    let harness: SupervisorHarness
    let avahi: PrivateAvahi
    let media: MediaFileServer
    private(set) var receivers: [ReceiverProcess] = []
    private var server: ControlServer?
    private(set) lazy var apps = AppControllers(socket: socket)
    /// The apps made with `app(_:)`, oldest first.
    var appControllers: [AVSystemRouteController] { apps.all }
    var supervisor: Supervisor { harness.supervisor }
    var socket: String { harness.root + "/mediarouted.sock" }
    static let protocolID = ReferenceProtocol.protocolID

    /// Runs `body` on a fresh bed and always tears it down, whether `body` returns, throws or is cancelled.
    /// `mprisBusAddress`: a session bus the supervisor shows media sessions on.
    /// `reconnectWindow`: how long a route waits for a receiver that went away (zero: it ends at once).
    static func run(mprisBusAddress: String? = nil, reconnectWindow: Duration = .zero, _ body: (ReferenceTestBed) async throws -> Void) async throws {
        let bed = try await ReferenceTestBed(mprisBusAddress: mprisBusAddress, reconnectWindow: reconnectWindow)
        try await withTearDown { try await body(bed) } tearDown: { await bed.tearDown() }
    }

    private init(mprisBusAddress: String?, reconnectWindow: Duration) async throws {
        harness = try SupervisorHarness()
        avahi = try await PrivateAvahi()
        let directory = harness.root + "/media"
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try await MediaFileServer.makeTone(at: directory + "/tone.wav", seconds: 4, title: "Test Tone")
            media = try await MediaFileServer(directory: directory)
        } catch {
            await avahi.stop()
            throw error
        }
        let manifest = ReferenceProtocol.driverManifest(executable: DaemonHarness.binary("mediaroute-reference-driver"),
                                                        environment: ["DBUS_SYSTEM_BUS_ADDRESS": avahi.busAddress, "SWIFT_BACKTRACE": "enable=no"],
                                                        restart: ["intensity": 5, "periodSeconds": 60, "initialBackoffMilliseconds": 50, "maximumBackoffMilliseconds": 500])
        try Data(JSONWriter.encode(manifest)).write(to: URL(fileURLWithPath: harness.drivers + "/reference.json"))
        do {
            server = try await harness.startServing(at: socket, mprisBusAddress: mprisBusAddress, reconnectWindow: reconnectWindow)
        } catch {
            await tearDown()
            throw error
        }
    }

    @discardableResult
    func receiver(_ name: String, arguments: [String] = [], environment: [String: String] = [:]) async throws -> ReceiverProcess {
        let receiver = try ReceiverProcess(name: name, avahi: avahi, root: harness.root, arguments: arguments, environment: environment)
        receivers.append(receiver)
        try await receiver.waitUntilAnnounced()
        return receiver
    }

    /// Starts receiver "Den TV" and waits until a picker, opened for that and closed again, lists it.
    func listedReceiver(arguments: [String], environment: [String: String] = [:]) async throws -> ReceiverProcess {
        let name = "Den TV"
        let view = PickerView()
        let picker = await supervisor.openPicker { view.update($0) }
        let receiver = try await receiver(name, arguments: arguments, environment: environment)
        try await waitForPicker(view, [name])
        await supervisor.closePicker(picker.id)
        return receiver
    }

    func app(_ applicationIdentifier: String = "org.test.app") -> AVSystemRouteController {
        apps.make(applicationIdentifier, protocols: [Self.protocolID])
    }

    /// Opens a picker and waits until exactly `names` are in it.
    func waitForPicker(_ view: PickerView, _ names: Set<String>, seconds: Double = 20) async throws {
        try await harness.waitForPicker(view, names, seconds: seconds)
    }

    /// The device is in the picker (discovery ran), then activated; pairing answered by `code`.
    @discardableResult
    func activate(_ name: String, code: @escaping @Sendable (PairingRequest) async -> String?) async throws -> RouteDescription {
        try await supervisor.activate(name, pairing: code)
    }

    /// Activates `receiver`, typing the code it shows.
    @discardableResult
    func activateTypingTheCode(_ receiver: ReceiverProcess) async throws -> RouteDescription {
        try await activate(receiver.name) { _ in try? await receiver.pairingCode() }
    }

    func playback(_ device: String) async -> PlaybackStatus? {
        await supervisor.activeRoutes().first { $0.device.displayName == device }?.playback?.status
    }

    func tearDown() async {
        await apps.invalidateAll()
        server?.close()
        for receiver in receivers { await receiver.stop() }
        await harness.tearDown()
        await media.stop()
        await avahi.stop()
    }
}
