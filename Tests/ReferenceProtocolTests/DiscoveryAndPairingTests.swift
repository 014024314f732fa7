import Foundation
import MediaDevice
import MediaRouteIPC
import PrivateDaemons
@testable import MediaRouteSupervisor
import Testing
import TestSupport

/// Real avahi-daemon (private bus, its own network namespace), real receivers, the real driver.
@Suite("Reference protocol: discovery and pairing", .serialized, .timeLimit(.minutes(3)))
struct DiscoveryAndPairingTests {
    @Test func receiversAreDiscoveredAndRemovedWhenTheyExit() async throws {
        try await ReferenceTestBed.run { bed in
            let view = PickerView()
            let picker = await bed.supervisor.openPicker { view.update($0) }
            let den = try await bed.receiver("Den TV")
            try await bed.waitForPicker(view, ["Den TV"])
            let route = try #require(view.current.first?.routes.first)
            #expect(route.protocolID == ReferenceTestBed.protocolID && route.protocolName == "MediaRoute")
            #expect(route.device.deviceType == .tv && route.device.capabilities == [.urlPlayback, .realtimeAudioStreaming, .realtimeVideoStreaming])
            #expect(route.device.volumeControl == .absolute && route.device.canMute)
            #expect(route.device.requiredNetworkEndpoints.first?.host == "127.0.0.1")

            try await bed.receiver("Hall Speaker", arguments: ["--type", "speaker"])
            try await bed.waitForPicker(view, ["Den TV", "Hall Speaker"])
            #expect(view.current.first { $0.name == "Hall Speaker" }?.routes.first?.device.deviceType == .speaker)

            await den.stop()  // withdraws its announcement
            try await bed.waitForPicker(view, ["Hall Speaker"])
            await bed.supervisor.closePicker(picker.id)
        }
    }

    @Test func discoverySurvivesAnAvahiRestartAndAnActiveRouteDoesNotNotice() async throws {
        try await ReferenceTestBed.run { bed in
            let view = PickerView()
            let picker = await bed.supervisor.openPicker { view.update($0) }
            let den = try await bed.receiver("Den TV", arguments: ["--auth", "none"])
            try await bed.receiver("Hall TV", arguments: ["--auth", "none"])
            try await bed.waitForPicker(view, ["Den TV", "Hall TV"])
            try await bed.activate("Den TV") { _ in nil }
            // Longer than an Avahi restart takes on a busy machine: it must still be playing after it.
            try await MediaFileServer.makeTone(at: bed.harness.root + "/media/long.wav", seconds: 60, title: "Long Tone")
            _ = try await bed.supervisor.startSession("Den TV", url: bed.media.url("long.wav"))

            let beforeRestart = den.console.mark
            await bed.avahi.stopDaemon()
            // Discovery fails, with the reason; the idle receiver leaves the picker, the active one stays.
            try await bed.harness.waitUntil("discovery failure reported") { bed.harness.log.contains("the Avahi daemon is not running") }
            try await bed.waitForPicker(view, ["Den TV"])
            #expect(await bed.supervisor.activeRoutes().count == 1)

            try await bed.avahi.startDaemon()
            // Receivers announce themselves again, and the driver finds them again, by itself.
            try await bed.waitForPicker(view, ["Den TV", "Hall TV"], seconds: 30)
            let state = await bed.playback("Den TV")?.state
            #expect(state == .playing, "Den TV printed since the restart:\n\(den.console.output(after: beforeRestart))")
            try await den.waitFor("announced as \"Den TV\"", after: beforeRestart)
            await bed.supervisor.closePicker(picker.id)
        }
    }

    @Test func pairingGoodWrongCancelledRememberedAndRateLimited() async throws {
        try await ReferenceTestBed.run { bed in
            let view = PickerView()
            let picker = await bed.supervisor.openPicker { view.update($0) }
            let tv = try await bed.receiver("Den TV")
            try await bed.waitForPicker(view, ["Den TV"])

            // Cancelled: the person dismissed the prompt.
            let cancelled = await #expect(throws: MediaDeviceError.self) { try await bed.activate("Den TV") { _ in nil } }
            #expect(cancelled?.code == .authorizationFailed)
            #expect(cancelled?.message == "pairing with Den TV was cancelled")

            // Wrong: the receiver says how many tries are left. The prompt says what to type.
            let asked = PromptLog()
            let wrong = await #expect(throws: MediaDeviceError.self) {
                try await bed.activate("Den TV") { request in asked.record(request); return "0000" == (try? await tv.pairingCode()) ? "1111" : "0000" }
            }
            #expect(wrong?.code == .authorizationFailed)
            #expect(wrong?.message == "Den TV: wrong code; 2 attempts left before pairing is locked")
            #expect(asked.requests.first?.method == .numericCode(length: .fourCharacter))
            #expect(asked.requests.first?.reason == "Enter the code Den TV shows.")

            // Good: the code the receiver shows.
            let route = try await bed.activateTypingTheCode(tv)
            #expect(route.device.displayName == "Den TV")
            try await tv.waitFor("paired with mediarouted on ")
            try await bed.supervisor.deactivate("Den TV")

            // Remembered: no prompt the second time, and after a driver restart too.
            try await bed.activate("Den TV") { _ in Issue.record("asked for a code again"); return nil }
            try await bed.supervisor.deactivate("Den TV")
            try await bed.supervisor.restartDriver(ReferenceTestBed.protocolID)
            try await bed.waitForPicker(view, ["Den TV"])
            try await bed.activate("Den TV") { _ in Issue.record("asked for a code after a restart"); return nil }
            await bed.supervisor.closePicker(picker.id)
        }
    }

    @Test func repeatedWrongCodesLockPairing() async throws {
        try await ReferenceTestBed.run { bed in
            let view = PickerView()
            let picker = await bed.supervisor.openPicker { view.update($0) }
            let tv = try await bed.receiver("Den TV", arguments: ["--auth", "pin6"])
            try await bed.waitForPicker(view, ["Den TV"])
            for left in [2, 1] {
                let wrong = await #expect(throws: MediaDeviceError.self) { try await bed.activate("Den TV") { _ in "000000" } }
                #expect(wrong?.message == "Den TV: wrong code; \(left) attempt\(left == 1 ? "" : "s") left before pairing is locked")
            }
            let locked = await #expect(throws: MediaDeviceError.self) { try await bed.activate("Den TV") { _ in "000000" } }
            #expect(locked?.message.hasPrefix("Den TV: too many wrong codes; pairing is locked for ") == true, "\(locked?.message ?? "")")
            // Even the right code is refused while locked.
            let refused = await #expect(throws: MediaDeviceError.self) { try await bed.activateTypingTheCode(tv) }
            #expect(refused?.message.contains("pairing is locked") == true)
            await bed.supervisor.closePicker(picker.id)
        }
    }

    @Test func aPasswordReceiverAsksForItsPassword() async throws {
        try await ReferenceTestBed.run { bed in
            let view = PickerView()
            let picker = await bed.supervisor.openPicker { view.update($0) }
            try await bed.receiver("Study Speaker", arguments: ["--auth", "password", "--password", "hunter2", "--type", "speaker"])
            try await bed.waitForPicker(view, ["Study Speaker"])
            let asked = PromptLog()
            try await bed.activate("Study Speaker") { request in asked.record(request); return "hunter2" }
            #expect(asked.requests.map(\.method) == [.password])
            await bed.supervisor.closePicker(picker.id)
        }
    }
}

/// The pairing prompts a test answered.
final class PromptLog: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [PairingRequest] = []
    func record(_ request: PairingRequest) { lock.withLock { list.append(request) } }
    var requests: [PairingRequest] { lock.withLock { list } }
}
