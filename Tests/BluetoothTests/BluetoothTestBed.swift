import AVSystemRouting
import DBus
import Foundation
import MediaDevice
import MediaRouteIPC
@testable import MediaRouteSupervisor
import PrivateDaemons
import Testing
import TestSupport

/// BlueZ's D-Bus API on a private system bus (python3-dbusmock with our template modelled on
/// bluetoothd: there is no Bluetooth hardware or kernel support here), the supervisor running the
/// real Bluetooth driver against it, serving apps on its socket, and a D-Bus client of the test's
/// own that plays the devices' part (adds them, presses their buttons, reads their audio).
final class BluetoothTestBed: @unchecked Sendable {  // set up in init, then used by its one test; tearDown after the body
    let harness: SupervisorHarness
    let blueZ: PrivateBlueZ
    /// The test's own connection to the private bus: the devices' side.
    var bus: DBusConnection { connection! }
    private var connection: DBusConnection?
    private var server: ControlServer?
    private(set) lazy var apps = AppControllers(socket: socket)
    private var media: MediaFileServer?
    var supervisor: Supervisor { harness.supervisor }
    var socket: String { harness.root + "/mediarouted.sock" }
    static let protocolID = "org.mediaroute.bluetooth"
    static let adapter: DBusObjectPath = "/org/bluez/hci0"

    /// Runs `body` on a fresh bed and always tears it down, whether `body` returns, throws or is cancelled.
    static func run(_ body: (BluetoothTestBed) async throws -> Void) async throws {
        let bed = try await BluetoothTestBed()
        try await withTearDown { try await body(bed) } tearDown: { await bed.tearDown() }
    }

    private init() async throws {
        harness = try SupervisorHarness()
        blueZ = try await PrivateBlueZ.start()
        do {
            connection = try await DBusConnection.connect(address: blueZ.busAddress)
            try await mock("AddAdapter", .string("hci0"), .string("Test Laptop"))
            let manifest: JSONValue = [
                "protocol": .string(Self.protocolID),
                "exportedType": ["identifier": .string(Self.protocolID), "conformsTo": ["public.media-sharing-protocol"], "description": "Bluetooth"],
                "executable": .string(DaemonHarness.binary("mediaroute-bluetooth-driver")),
                "environment": ["DBUS_SYSTEM_BUS_ADDRESS": .string(blueZ.busAddress), "SWIFT_BACKTRACE": "enable=no"],
                "restart": ["intensity": 5, "periodSeconds": 60, "initialBackoffMilliseconds": 50, "maximumBackoffMilliseconds": 500],
            ]
            try Data(JSONWriter.encode(manifest)).write(to: URL(fileURLWithPath: harness.drivers + "/bluetooth.json"))
            server = try await harness.startServing(at: socket)
        } catch {
            await tearDown()
            throw error
        }
    }

    /// Calls a method of the stand-in's `org.bluez.Mock` interface (what the test does to the devices).
    @discardableResult
    func mock(_ method: String, _ arguments: DBusValue...) async throws -> [DBusValue] {
        try await bus.call(destination: "org.bluez", path: "/", interface: "org.bluez.Mock", method: method, arguments)
    }

    /// An audio sink in range: `pairing` is how it pairs (passkey, pin, confirm, display-passkey, just-works).
    func addSpeaker(_ alias: String, address: String, icon: String = "audio-card", pairing: String = "just-works", code: String = "") async throws {
        try await mock("AddAudioDevice", .string("hci0"), .string(address), .string(alias), .string(icon), .string(pairing), .string(code))
    }

    static func devicePath(_ address: String) -> DBusObjectPath { adapter.appending("dev_" + address.replacingOccurrences(of: ":", with: "_")) }

    func deviceProperty(_ address: String, _ name: String) async throws -> DBusValue {
        try await bus.property(name, of: "org.bluez.Device1", at: Self.devicePath(address), on: "org.bluez")
    }

    /// The transport BlueZ made for `address` when it connected.
    func transportPath(_ address: String) async throws -> DBusObjectPath {
        var found: DBusObjectPath?
        try await harness.waitUntil("a transport for \(address)") {
            let objects = (try? await bus.managedObjects(on: "org.bluez")) ?? [:]
            found = objects.first { $0.value["org.bluez.MediaTransport1"]?["Device"]?.objectPath == Self.devicePath(address) }?.key
            return found != nil
        }
        return try #require(found)
    }

    /// An HTTP server on loopback with a 4 s 440 Hz tone, `tone.wav`, stopped with the bed.
    func mediaServer() async throws -> MediaFileServer {
        let directory = harness.root + "/media"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try await MediaFileServer.makeTone(at: directory + "/tone.wav", seconds: 4, title: "Test Tone")
        let server = try await MediaFileServer(directory: directory)
        media = server
        return server
    }

    func app(_ applicationIdentifier: String = "org.test.app") -> AVSystemRouteController {
        apps.make(applicationIdentifier, protocols: [Self.protocolID])
    }

    /// A speaker listed in a picker (opened for that and closed again), then activated.
    @discardableResult
    func activatedSpeaker(_ alias: String, address: String, icon: String = "audio-card") async throws -> RouteDescription {
        let view = PickerView()
        let picker = await supervisor.openPicker { view.update($0) }
        try await addSpeaker(alias, address: address, icon: icon)
        try await harness.waitUntil("picker lists \(alias)") { view.names().contains(alias) }
        await supervisor.closePicker(picker.id)
        return try await supervisor.activate(alias) { _ in nil }
    }

    func tearDown() async {
        await apps.invalidateAll()
        server?.close()
        await harness.tearDown()
        await media?.stop()
        await connection?.close()
        await blueZ.stopFromTask()
    }
}
