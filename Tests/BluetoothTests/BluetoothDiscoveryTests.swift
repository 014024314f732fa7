import DBus
import Foundation
import MediaDevice
@testable import MediaRouteSupervisor
import Testing
import TestSupport

/// Discovery against BlueZ's D-Bus API: audio sinks listed with their kind, other devices not;
/// devices removed; the adapter powered off and on; bluetoothd gone and back.
@Suite("Bluetooth: discovery", .serialized, .timeLimit(.minutes(3)))
struct BluetoothDiscoveryTests {
    @Test func audioSinksAreListedWithTheirKindAndNothingElseIs() async throws {
        try await BluetoothTestBed.run { bed in
            let view = PickerView()
            let picker = await bed.supervisor.openPicker { view.update($0) }
            try await bed.addSpeaker("Kitchen Speaker", address: "AA:BB:CC:00:00:01", icon: "audio-card")
            try await bed.addSpeaker("Running Buds", address: "AA:BB:CC:00:00:02", icon: "audio-headphones", pairing: "passkey", code: "123456")
            // A phone: no A2DP sink, so no route.
            try await bed.mock("AddDevice", .string("hci0"), .string("AA:BB:CC:00:00:03"), .string("Phone"))
            try await bed.harness.waitForPicker(view, ["Kitchen Speaker", "Running Buds"])
            let speaker = try #require(view.current.first { $0.name == "Kitchen Speaker" }?.routes.first?.device)
            #expect(speaker.id == "bluetooth:AA:BB:CC:00:00:01")
            #expect(speaker.deviceType == .bluetoothSpeaker && speaker.capabilities == [.urlPlayback, .realtimeAudioStreaming])
            #expect(speaker.volumeControl == .absolute && speaker.canMute)
            #expect(view.current.first { $0.name == "Running Buds" }?.routes.first?.device.deviceType == .headphones)
            #expect(!view.names().contains("Phone"))
            // Discovery ran as BlueZ documents it: a filter for A2DP sinks, then StartDiscovery.
            try await bed.harness.waitUntil("the adapter discovering") {
                (try? await bed.bus.property("Discovering", of: "org.bluez.Adapter1", at: BluetoothTestBed.adapter, on: "org.bluez").bool) == true
            }

            try await bed.bus.call(destination: "org.bluez", path: BluetoothTestBed.adapter, interface: "org.bluez.Adapter1", method: "RemoveDevice",
                                   [.objectPath(BluetoothTestBed.devicePath("AA:BB:CC:00:00:01"))])
            try await bed.harness.waitForPicker(view, ["Running Buds"])
            await bed.supervisor.closePicker(picker.id)
            try await bed.harness.waitUntil("discovery stopped") {
                (try? await bed.bus.property("Discovering", of: "org.bluez.Adapter1", at: BluetoothTestBed.adapter, on: "org.bluez").bool) == false
            }
        }
    }

    @Test func anAdapterPoweredOffOrBluetoothdGoneIsSaidAndDiscoveryComesBack() async throws {
        try await BluetoothTestBed.run { bed in
            let view = PickerView()
            let picker = await bed.supervisor.openPicker { view.update($0) }
            try await bed.addSpeaker("Kitchen Speaker", address: "AA:BB:CC:00:00:01")
            try await bed.harness.waitForPicker(view, ["Kitchen Speaker"])

            try await bed.bus.setProperty("Powered", of: "org.bluez.Adapter1", at: BluetoothTestBed.adapter, on: "org.bluez", to: .boolean(false))
            try await bed.harness.waitUntil("power-off reported") { bed.harness.log.contains("Bluetooth adapter hci0 was powered off") }
            try await bed.bus.setProperty("Powered", of: "org.bluez.Adapter1", at: BluetoothTestBed.adapter, on: "org.bluez", to: .boolean(true))
            try await bed.harness.waitUntil("discovering again") {
                (try? await bed.bus.property("Discovering", of: "org.bluez.Adapter1", at: BluetoothTestBed.adapter, on: "org.bluez").bool) == true
            }

            // bluetoothd stops: its devices go, and the operator is told why.
            await bed.blueZ.stopBlueZ()
            try await bed.harness.waitUntil("bluetoothd's absence reported") { bed.harness.log.contains("BlueZ (org.bluez) left the system bus") }
            try await bed.harness.waitForPicker(view, [])
            // It comes back (with its adapter and the speaker in range): found again without anyone asking.
            try await bed.blueZ.startBlueZ()
            try await bed.harness.waitUntil("the missing adapter reported") { bed.harness.log.contains("BlueZ lists no Bluetooth adapter") }
            try await bed.mock("AddAdapter", .string("hci0"), .string("Test Laptop"))
            try await bed.addSpeaker("Kitchen Speaker", address: "AA:BB:CC:00:00:01")
            try await bed.harness.waitForPicker(view, ["Kitchen Speaker"])
            await bed.supervisor.closePicker(picker.id)
        }
    }
}
