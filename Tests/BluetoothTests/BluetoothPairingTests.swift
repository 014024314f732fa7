import DBus
import Foundation
import MediaDevice
@testable import MediaRouteSupervisor
import Synchronization
import Testing
import TestSupport

/// Pairing through our BlueZ agent: every kind BlueZ asks for, a wrong code, a cancel, Just Works,
/// and a paired device activating again without asking.
@Suite("Bluetooth: pairing", .serialized, .timeLimit(.minutes(3)))
struct BluetoothPairingTests {
    /// Lists a device that pairs with `pairing`/`code` and returns once the picker showed it.
    private func listed(_ bed: BluetoothTestBed, _ alias: String, address: String, pairing: String, code: String) async throws {
        let view = PickerView()
        let picker = await bed.supervisor.openPicker { view.update($0) }
        try await bed.addSpeaker(alias, address: address, pairing: pairing, code: code)
        try await bed.harness.waitUntil("picker lists \(alias)") { view.names().contains(alias) }
        await bed.supervisor.closePicker(picker.id)
    }

    @Test func aPasskeyRightWrongAndCancelledThenRemembered() async throws {
        try await BluetoothTestBed.run { bed in
            let address = "AA:BB:CC:00:00:11"
            try await listed(bed, "Running Buds", address: address, pairing: "passkey", code: "123456")

            let asked = Mutex<[PairingRequest]>([])
            let wrong = await #expect(throws: MediaDeviceError.self) {
                _ = try await bed.supervisor.activate("Running Buds") { request in asked.withLock { $0.append(request) }; return "654321" }
            }
            #expect(wrong?.code == .authorizationFailed)
            #expect(wrong?.message == "Running Buds did not accept the code")
            let request = try #require(asked.withLock { $0.first })
            #expect(request.method == .numericCode(length: .sixCharacter))
            #expect(request.reason == "Enter the 6-digit code Running Buds shows.")
            #expect(try await bed.deviceProperty(address, "Paired").bool == false)

            let cancelled = await #expect(throws: MediaDeviceError.self) { try await bed.supervisor.activate("Running Buds") { _ in nil } }
            #expect(cancelled?.code == .authorizationFailed)
            #expect(cancelled?.message == "pairing with Running Buds was cancelled")

            _ = try await bed.supervisor.activate("Running Buds") { _ in "123456" }
            #expect(try await bed.deviceProperty(address, "Paired").bool == true)
            #expect(try await bed.deviceProperty(address, "Trusted").bool == true)
            #expect(try await bed.deviceProperty(address, "Connected").bool == true)

            // Deactivated, then activated again: paired and trusted, so nobody is asked.
            let route = try #require(await bed.supervisor.activeRoutes().first)
            try await bed.supervisor.deactivate(route.session)
            try await bed.harness.waitUntil("disconnected") { (try? await bed.deviceProperty(address, "Connected").bool) == false }
            _ = try await bed.supervisor.activate("Running Buds") { _ in Issue.record("asked again for a paired device"); return nil }
        }
    }

    @Test func aLegacyPINAConfirmationAndJustWorks() async throws {
        try await BluetoothTestBed.run { bed in
            try await listed(bed, "Old Speaker", address: "AA:BB:CC:00:00:21", pairing: "pin", code: "0000")
            let pinAsked = Mutex<PairingRequest?>(nil)
            _ = try await bed.supervisor.activate("Old Speaker") { request in pinAsked.withLock { $0 = request }; return "0000" }
            #expect(pinAsked.withLock { $0?.method } == .password)
            try await bed.supervisor.deactivate(try #require(await bed.supervisor.activeRoutes().first).session)

            // Numeric comparison: the person types the number if the device shows the same one.
            try await listed(bed, "Car Kit", address: "AA:BB:CC:00:00:22", pairing: "confirm", code: "")
            let confirmAsked = Mutex<PairingRequest?>(nil)
            _ = try await bed.supervisor.activate("Car Kit") { request in
                confirmAsked.withLock { $0 = request }
                // "Car Kit should show 123456: if it does, type that number to confirm."
                return request.reason?.split(whereSeparator: { !$0.isNumber }).first { $0.count == 6 }.map(String.init)
            }
            #expect(confirmAsked.withLock { $0?.reason?.hasPrefix("Car Kit should show ") } == true)
            try await bed.supervisor.deactivate(try #require(await bed.supervisor.activeRoutes().first).session)

            try await listed(bed, "Cheap Speaker", address: "AA:BB:CC:00:00:23", pairing: "just-works", code: "")
            _ = try await bed.supervisor.activate("Cheap Speaker") { _ in Issue.record("asked for a code by a Just Works device"); return nil }
            #expect(try await bed.deviceProperty("AA:BB:CC:00:00:23", "Paired").bool == true)
        }
    }

    @Test func aNumberToTypeOnTheDeviceIsShownToThePerson() async throws {
        try await BluetoothTestBed.run { bed in
            try await listed(bed, "Keypad Speaker", address: "AA:BB:CC:00:00:41", pairing: "display-passkey", code: "246810")
            let asked = Mutex<PairingRequest?>(nil)
            _ = try await bed.supervisor.activate("Keypad Speaker") { request in asked.withLock { $0 = request }; return "ok" }
            #expect(asked.withLock { $0?.reason } == "Type 246810 on Keypad Speaker, then type it here too to go on.")
            #expect(try await bed.deviceProperty("AA:BB:CC:00:00:41", "Paired").bool == true)
        }
    }

    @Test func aConfirmationThatDoesNotMatchIsRejected() async throws {
        try await BluetoothTestBed.run { bed in
            try await listed(bed, "Car Kit", address: "AA:BB:CC:00:00:31", pairing: "confirm", code: "")
            let refused = await #expect(throws: MediaDeviceError.self) { try await bed.supervisor.activate("Car Kit") { _ in "000001" } }
            #expect(refused?.code == .authorizationFailed)
            #expect(try await bed.deviceProperty("AA:BB:CC:00:00:31", "Paired").bool == false)
        }
    }
}
