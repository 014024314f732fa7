@testable import AVSystemRouting
import DBus
import Foundation
import MediaCodecs
import MediaDevice
import MediaRouteIPC
@testable import MediaRouteSupervisor
import PrivateDaemons
import Synchronization
import Testing
import TestSupport

/// Audio end to end: an app's samples, or a URL played by the driver, reach the transport BlueZ
/// handed out as A2DP media packets that decode (libsbc) to what went in; volume both ways; the
/// device's buttons; the device going away mid-stream.
@Suite("Bluetooth: audio, volume, buttons and going away", .serialized, .timeLimit(.minutes(3)))
struct BluetoothAudioTests {
    /// An activated speaker and an app holding its route.
    private func route(_ bed: BluetoothTestBed, address: String = "AA:BB:CC:00:00:41",
                       app: AVSystemRouteController? = nil) async throws -> (AVSystemRoute, ActivatedRouteObserver) {
        let app = app ?? bed.app()
        let observer = ActivatedRouteObserver()
        #expect(app.addObserver(observer))
        try await bed.activatedSpeaker("Kitchen Speaker", address: address)
        try await bed.harness.waitUntil("app has the route") { await MainActor.run { observer.route != nil } }
        return (try #require(await MainActor.run { observer.route }), observer)
    }

    @Test func aSineFromAnAppDecodesFromTheTransportWithItsShape() async throws {
        try await BluetoothTestBed.run { bed in
            let address = "AA:BB:CC:00:00:41"
            let (route, _) = try await route(bed, address: address)
            let stream = try await route.startAudioStream()
            // The app learns how late its sound is heard: the device's own 150 ms (BlueZ's Delay)
            // and one 7-frame SBC packet (18.7 ms at 48 kHz) plus the sender's 10 ms lead.
            let latency = try #require(stream.outputLatency)
            #expect(abs(latency - (0.150 + 896.0 / 48_000 + 0.010)) < 0.001, "\(latency)")
            let peer = try await A2DPCapture(bed, address: address)
            defer { peer.close() }
            // The device reads as the packets come, as a real one does.
            let reading = Task { try await peer.read(seconds: 1.8) }

            // Two seconds of 1 kHz at half scale, in 20 ms records at real-time pace.
            let tone = 1_000.0
            #expect(try await AppTone.write(stream, seconds: 2, frequency: tone))
            let decoded = try await reading.value
            // The headphones' pause button, while the app's samples play: the app hears it.
            let commands = route.remoteCommands()
            let heard = Mutex<[MediaRemoteCommand]>([])
            Task { for await command in commands { heard.withLock { $0.append(command) } } }
            try await bed.mock("PressButton", .string(address), .string("Pause"))
            try await bed.harness.waitUntil("the app hears pause") { heard.withLock { $0 } == [.pause] }
            try await stream.stop()
            #expect(peer.rtpSequenceGaps == 0)
            let snr = ToneFit.snr(decoded.samples, channels: decoded.channels, sampleRate: decoded.sampleRate, frequency: tone, skipSeconds: 0.2)
            #expect(snr >= 25, "SNR \(snr) dB")
        }
    }

    @Test func volumeTravelsBothWays() async throws {
        try await BluetoothTestBed.run { bed in
            let address = "AA:BB:CC:00:00:42"
            _ = try await route(bed, address: address)
            let transport = try await bed.transportPath(address)
            let set = try await bed.supervisor.volume("Kitchen Speaker", .set(0.3))
            #expect(set.volume == 0.3)
            try await bed.harness.waitUntil("BlueZ has volume 38 of 127") {
                (try? await bed.bus.property("Volume", of: "org.bluez.MediaTransport1", at: transport, on: "org.bluez").uint16) == 38
            }
            // The speaker's own buttons.
            try await bed.mock("SetRemoteVolume", .string(address), .uint16(127))
            try await bed.harness.waitUntil("the system hears the speaker's level") {
                await bed.supervisor.activeRoutes().first?.volume == 1.0
            }
            _ = try await bed.supervisor.volume("Kitchen Speaker", .mute)
            try await bed.harness.waitUntil("muted is level 0 on A2DP") {
                (try? await bed.bus.property("Volume", of: "org.bluez.MediaTransport1", at: transport, on: "org.bluez").uint16) == 0
            }
            _ = try await bed.supervisor.volume("Kitchen Speaker", .unmute)
            try await bed.harness.waitUntil("unmuted back to 127") {
                (try? await bed.bus.property("Volume", of: "org.bluez.MediaTransport1", at: transport, on: "org.bluez").uint16) == 127
            }
        }
    }

    @Test func aURLPlaysHereAndTheDevicesButtonsReachTheApp() async throws {
        try await BluetoothTestBed.run { bed in
            let address = "AA:BB:CC:00:00:43"
            let media = try await bed.mediaServer()
            let (route, _) = try await route(bed, address: address)
            let session = AVSystemRouteSession(url: URL(string: media.url("tone.wav"))!, mode: .player)
            #expect(route.addSession(session))
            let playing = try await session.start()
            let peer = try await A2DPCapture(bed, address: address)
            defer { peer.close() }
            let decoded = try await peer.read(seconds: 1.0)
            let snr = ToneFit.snr(decoded.samples, channels: decoded.channels, sampleRate: decoded.sampleRate, frequency: 440, skipSeconds: 0.1)
            #expect(snr >= 25, "SNR \(snr) dB")

            try await bed.mock("PressButton", .string(address), .string("Pause"))
            try await bed.harness.waitUntil("the app sees the pause") { await MainActor.run { !playing.playbackControl.isPlaying } }
            try await bed.mock("PressButton", .string(address), .string("Play"))
            try await bed.harness.waitUntil("the app sees play again") { await MainActor.run { playing.playbackControl.isPlaying } }
        }
    }

    @Test func aDeviceThatDisconnectsMidStreamEndsTheRoute() async throws {
        try await BluetoothTestBed.run { bed in
            let address = "AA:BB:CC:00:00:44"
            let app = bed.app()
            let changes = app.routeChanges()
            let seen = EventLog<AVSystemRouteChange>()
            Task { for await change in changes { seen.append(change) } }
            let (route, _) = try await self.route(bed, address: address, app: app)
            let stream = try await route.startAudioStream()
            let peer = try await A2DPCapture(bed, address: address)
            defer { peer.close() }
            let silence = [Float](repeating: 0, count: 960 * 2)
            #expect(try silence.withUnsafeBufferPointer { try stream.write($0) })
            _ = try await peer.read(seconds: 0.01)

            try await bed.mock("DisconnectDevice", .string(address))
            try await bed.harness.waitUntil("route ended") { await bed.supervisor.activeRoutes().isEmpty }
            try await bed.harness.waitUntil("the app hears oldDeviceUnavailable") { seen.all.contains { $0.reason == .oldDeviceUnavailable } }
            #expect(seen.all.first { $0.reason == .oldDeviceUnavailable }?.message == "Kitchen Speaker disconnected (switched off or out of range)")
            // Still paired and listed: it can be activated again when it is back.
            let view = PickerView()
            let picker = await bed.supervisor.openPicker { view.update($0) }
            #expect(picker.entries.map(\.name) == ["Kitchen Speaker"])
            _ = try await bed.supervisor.activate("Kitchen Speaker") { _ in nil }
            #expect(try await bed.deviceProperty(address, "Connected").bool == true)
            await bed.supervisor.closePicker(picker.id)
        }
    }
}
