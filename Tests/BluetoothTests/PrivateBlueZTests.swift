import DBus
import Foundation
import MediaRouteIPC
import PrivateDaemons
import Testing

/// The BlueZ stand-in itself: that it answers as bluetoothd does (its conformance script, acting as
/// a driver would), that its mock controls work from Swift, and that it leaves nothing behind.
@Suite("BlueZ stand-in") struct PrivateBlueZTests {
    static let check = URL(fileURLWithPath: PrivateBlueZ.template).deletingLastPathComponent().appendingPathComponent("check_template.py").path

    @Test func theTemplateAnswersAsBluetoothdDoes() async throws {
        let blueZ = try await PrivateBlueZ.start()
        let result = try await withTearDown {
            try await CapturedCommand.run("/usr/bin/python3", [Self.check, "--address", blueZ.busAddress], timeout: .seconds(60))
        } tearDown: { await blueZ.stop() }
        #expect(result.succeeded, "check_template.py \(result.timedOut ? "timed out" : String(describing: result.termination)):\n\(result.output)")
        #expect(result.output.contains("all checks passed"))
    }

    @Test func mockControlsGoThroughBusctl() async throws {
        let blueZ = try await PrivateBlueZ.start()
        try await withTearDown {
            #expect(try await blueZ.mock("AddAdapter", ["hci0", "Test Laptop"]) == "s \"/org/bluez/hci0\"")
            let device = try await blueZ.mock("AddAudioDevice", ["hci0", "AA:BB:CC:00:00:01", "Kitchen Speaker", "audio-card", "pin", "0000"])
            #expect(device == "s \"/org/bluez/hci0/dev_AA_BB_CC_00_00_01\"")
            try await blueZ.mock("SetSinkCapabilities", ["AA:BB:CC:00:00:01", "4", "63", "255", "2", "53"])
            let unknown = await #expect(throws: PrivateDaemonError.self) { try await blueZ.mock("Explode") }
            #expect(unknown?.description.contains("has no method Explode") == true)
            let refused = await #expect(throws: PrivateDaemonError.self) {
                try await blueZ.mock("AddAudioDevice", ["hci0", "AA:BB:CC:00:00:02", "Odd", "audio-card", "telepathy", ""])
            }
            #expect(refused?.description.contains("unknown pairing kind telepathy") == true)
        } tearDown: { await blueZ.stop() }
    }

    @Test func bluetoothdGoesAndComesBackOnTheSameBus() async throws {
        let blueZ = try await PrivateBlueZ.start()
        try await withTearDown {
            let bus = try await DBusConnection.connect(address: blueZ.busAddress)
            try await withTearDown {
                try await blueZ.mock("AddAdapter", ["hci0", "Test Laptop"])
                await blueZ.stopBlueZ()
                #expect(try await bus.nameHasOwner("org.bluez") == false)
                try await blueZ.startBlueZ()
                #expect(try await bus.nameHasOwner("org.bluez") == true)
                // A new bluetoothd: the adapter must be added again, as after a real restart here.
                #expect(try await blueZ.mock("AddAdapter", ["hci0", "Test Laptop"]) == "s \"/org/bluez/hci0\"")
            } tearDown: { await bus.close() }
        } tearDown: { await blueZ.stop() }
    }

    @Test func stopLeavesNoProcessOrDirectory() async throws {
        let blueZ = try await PrivateBlueZ.start()
        let pids = [blueZ.bus.pid, try #require(blueZ.pid)]
        let directory = blueZ.bus.directory.path
        #expect(FileManager.default.fileExists(atPath: directory))
        await blueZ.stop()
        for pid in pids {
            // Reaped by stop(): no such process any more (a reused PID would not be our child).
            #expect(kill(pid, 0) == -1 && errno == ESRCH, "process \(pid) is still there")
        }
        #expect(!FileManager.default.fileExists(atPath: directory))
    }
}
