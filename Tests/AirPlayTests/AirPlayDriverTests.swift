import Foundation
import MediaDevice
import MediaRouteIPC
@testable import MediaRouteSupervisor
import PrivateDaemons
import Testing
import TestSupport

/// The AirPlay driver under the supervisor, against a real shairport-sync (its audio read back
/// from its pipe output) announced through a private Avahi daemon.
@Suite("AirPlay: shairport-sync receivers", .serialized)
struct AirPlayDriverTests {
    /// Runs `body` with a receiver and a supervisor whose AirPlay driver browses the receiver's Avahi.
    static func run(password: String? = nil, _ body: (SupervisorHarness, Supervisor, PrivateAirPlayReceiver) async throws -> Void) async throws {
        let receiver = try await PrivateAirPlayReceiver.start(name: "Kitchen Speaker", password: password)
        try await withTearDown {
            try await SupervisorHarness.run { harness in
                let manifest: JSONValue = [
                    "protocol": "org.mediaroute.airplay",
                    "exportedType": ["identifier": "org.mediaroute.airplay", "conformsTo": ["public.media-sharing-protocol"], "description": "AirPlay"],
                    "executable": .string(Executables.sibling("mediaroute-airplay-driver")),
                    "environment": ["DBUS_SYSTEM_BUS_ADDRESS": .string(receiver.busAddress), "SWIFT_BACKTRACE": "enable=no"],
                    "timeouts": ["requestMilliseconds": 15000],
                ]
                try Data(JSONWriter.encode(manifest)).write(to: URL(fileURLWithPath: harness.drivers + "/airplay.json"))
                let supervisor = try await harness.start()
                let view = PickerView()
                let picker = await supervisor.openPicker { view.update($0) }
                try await harness.waitForPicker(view, ["Kitchen Speaker"])
                await supervisor.closePicker(picker.id)
                try await body(harness, supervisor, receiver)
            }
        } tearDown: {
            await receiver.stop()
        }
    }

    @Test func aReceiverIsListedPlaysAURLAndKeepsItsVolume() async throws {
        try await Self.run { harness, supervisor, receiver in
            let entry = try #require(await supervisor.pickerEntries().first { $0.name == "Kitchen Speaker" })
            let device = try #require(entry.routes.first?.device)
            #expect(device.id.hasPrefix("airplay:") && device.deviceType == .speaker && device.volumeControl == .absolute)
            _ = try await supervisor.activate("Kitchen Speaker") { _ in nil }
            // A 441 Hz tone played here (a receiver fetches nothing) reaches its output cleanly.
            let tone = harness.root + "/tone.wav"
            try await MediaFileServer.makeTone(at: tone, seconds: 12, frequency: 441, title: "Tone")
            let start = receiver.audioBytes
            _ = try await supervisor.startSession("Kitchen Speaker", url: URL(fileURLWithPath: tone).absoluteString)
            let second = 44_100 * 4  // bytes of one second of output
            // About 2 s of AirPlay latency, then the tone.
            try await harness.waitUntil("four seconds of audio at the receiver", seconds: 20) { receiver.audioBytes - start > 4 * second }
            let loud = receiver.audio(from: receiver.audioBytes - second)
            let snr = ToneFit.snr(loud, channels: 2, sampleRate: 44_100, frequency: 441, skipSeconds: 0)
            #expect(snr >= 30, "SNR \(snr) dB")

            // Half volume is -15 dB on AirPlay's scale: a 0.178 of the level, once the receiver's
            // buffer (2 s) has played out.
            _ = try await supervisor.volume("Kitchen Speaker", .set(0.5))
            let changed = receiver.audioBytes
            try await harness.waitUntil("three more seconds of audio", seconds: 20) { receiver.audioBytes - changed > 3 * second }
            let quiet = receiver.audio(from: receiver.audioBytes - second)
            let ratio = Self.level(quiet) / Self.level(loud)
            #expect(abs(ratio - 0.1778) < 0.02, "level ratio \(ratio)")
            try await supervisor.stopSession("Kitchen Speaker")
            try await supervisor.deactivate("Kitchen Speaker")

            // The volume is kept for the next activation (a speaker never comes back at full volume).
            _ = try await supervisor.activate("Kitchen Speaker") { _ in nil }
            #expect(try await supervisor.volume("Kitchen Speaker", .get).volume == 0.5)
        }
    }

    /// The RMS of the left channel, in full-scale units.
    static func level(_ interleaved: [Int16]) -> Double {
        let left = ToneAnalysis.channel(0, of: interleaved, channels: 2)
        return (left.reduce(0) { $0 + $1 * $1 } / Double(max(left.count, 1))).squareRoot()
    }

    @Test func aPasswordIsAskedOnceRefusedWhenWrongAndRemembered() async throws {
        try await Self.run(password: "hunter2") { harness, supervisor, receiver in
            let asked = EventLog<String>()
            let wrong = await #expect(throws: MediaDeviceError.self) {
                _ = try await supervisor.activate("Kitchen Speaker") { request in
                    asked.append("\(request.method)")
                    return "wrong"
                }
            }
            #expect(wrong?.code == .authorizationFailed, "\(String(describing: wrong))")
            #expect(asked.all == ["password"])
            _ = try await supervisor.activate("Kitchen Speaker") { _ in
                asked.append("again")
                return "hunter2"
            }
            try await supervisor.deactivate("Kitchen Speaker")
            // Remembered: no question the third time.
            _ = try await supervisor.activate("Kitchen Speaker") { _ in
                asked.append("third")
                return nil
            }
            #expect(asked.all == ["password", "again"])
        }
    }
}
