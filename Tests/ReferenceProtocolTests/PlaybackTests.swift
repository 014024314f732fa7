import AVSystemRouting
import Foundation
import MediaDevice
import MediaRouteIPC
@testable import MediaRouteSupervisor
import Testing
import TestSupport

@Suite("Reference protocol: playback, volume, data, and receivers that go away", .serialized, .timeLimit(.minutes(3)))
struct PlaybackTests {
    /// A receiver (no pairing) in the picker and activated.
    private func activeReceiver(_ bed: ReferenceTestBed) async throws -> ReceiverProcess {
        let receiver = try await bed.listedReceiver(arguments: ["--auth", "none"])
        try await bed.activate("Den TV") { _ in nil }
        return receiver
    }

    /// Activates the receiver, waits until the app observed by `recorder` has its route, and starts
    /// a session of `mode` playing the tone there.
    private func toneSession(_ bed: ReferenceTestBed, seenBy recorder: AppObserver, mode: AVSystemRoute.LaunchMode)
        async throws -> (ReceiverProcess, AVSystemRouteMediaSession) {
        let tv = try await activeReceiver(bed)
        try await bed.harness.waitUntil("app has the route") { await MainActor.run { recorder.route != nil } }
        let route = try #require(await MainActor.run { recorder.route })
        let session = AVSystemRouteSession(url: URL(string: bed.media.url("tone.wav"))!, mode: mode)
        #expect(route.addSession(session))
        return (tv, try await session.start())
    }

    private func position(_ bed: ReferenceTestBed) async -> Double { await bed.playback("Den TV")?.position ?? -1 }

    @Test func aURLPlaysAtRealTimePaceWithSeekPauseSpeedAndEnd() async throws {
        try await ReferenceTestBed.run { bed in
            let tv = try await activeReceiver(bed)
            let started = try await bed.supervisor.startSession("Den TV", url: bed.media.url("tone.wav"))
            let first = try #require(started.playback?.status)
            #expect(first.state == .playing)
            #expect(first.timeRange == 0...4)
            #expect(first.metadata.title == "Test Tone")
            try await tv.waitFor("playing \(bed.media.url("tone.wav"))")

            // The position advances by itself, at the media's pace.
            try await bed.harness.waitUntil("position advances") { await position(bed) >= 0.5 }
            // Pause: it stops advancing.
            _ = try await bed.supervisor.setPlayback("Den TV", PlaybackChanges(isPlaying: false))
            try await bed.harness.waitUntil("paused") { await bed.playback("Den TV")?.state == .paused }
            let paused = await position(bed)
            try await Task.sleep(for: .milliseconds(700))
            let later = await position(bed)
            #expect(abs(later - paused) < 0.05, "paused at \(paused), later \(later)")
            // Seek while paused, then play at twice the speed: the rest (about 2 s of media) takes about 1 s.
            _ = try await bed.supervisor.setPlayback("Den TV", PlaybackChanges(position: 2, speed: 2, isPlaying: true))
            try await bed.harness.waitUntil("plays from 2 s") { let p = await position(bed); return p >= 2 && p < 3.9 }
            try await bed.harness.waitUntil("the receiver reports speed 2") { await bed.playback("Den TV")?.speed == 2 }
            // The end of the media is reported.
            try await bed.harness.waitUntil("ended", seconds: 10) { await bed.playback("Den TV")?.state == .ended }
            #expect(await position(bed) == 4.0)
            try await tv.waitFor("s1 reached the end")
            // A URL the receiver cannot fetch is a clear error.
            let missing = await #expect(throws: MediaDeviceError.self) { try await bed.supervisor.startSession("Den TV", url: bed.media.url("missing.wav")) }
            #expect(missing?.code == .sessionFailed)
            #expect(missing?.message.contains("Den TV: cannot play \(bed.media.url("missing.wav")):") == true, "\(missing?.message ?? "")")
        }
    }

    @Test func volumeAndMuteGoBothWaysAndADeviceSideChangeReachesAnApp() async throws {
        try await ReferenceTestBed.run { bed in
            let app = bed.app()
            let recorder = AppObserver()
            #expect(app.addObserver(recorder))
            let (tv, media) = try await toneSession(bed, seenBy: recorder, mode: .player)

            // System to device: the receiver's own status line shows it.
            #expect(try await bed.supervisor.volume("Den TV", .set(0.3)).volume == 0.3)
            try await tv.statusShows("volume 30%, 1 controller(s)")
            #expect(try await bed.supervisor.volume("Den TV", .mute).muted == true)
            try await tv.statusShows("volume 30% muted")
            #expect(try await bed.supervisor.volume("Den TV", .change(4)).volume == 0.5)
            _ = try await bed.supervisor.volume("Den TV", .unmute)
            try await tv.statusShows("volume 50%, 1 controller(s)")
            // Device to system: someone turns the receiver's own knob.
            tv.press("volume 70")
            try await bed.harness.waitUntil("supervisor sees 70%") { await bed.supervisor.activeRoutes().first?.volume == 0.7 }
            try await bed.harness.waitUntil("the app's route sees 70%") { media.route.volume == 0.7 }
            try await bed.harness.waitUntil("the app's session sees 70%") { await MainActor.run { media.playbackControl.volume == 0.7 } }
        }
    }

    @Test func anApplicationModeSessionTalksToTheReceiversApplication() async throws {
        try await ReferenceTestBed.run { bed in
            let app = bed.app("org.mediaroute.notes")
            let recorder = AppObserver()
            #expect(app.addObserver(recorder))
            let (_, media) = try await toneSession(bed, seenBy: recorder, mode: .application)
            #expect(media.application == "org.mediaroute.notes")
            let channel = try #require(media.dataChannel)
            await MainActor.run { channel.dataDelegate = recorder }
            for message in ["add buy milk", "add call mum", "list"] { try await channel.send(Data(message.utf8)) }
            try await bed.harness.waitUntil("three answers") { await MainActor.run { recorder.received.count == 3 } }
            #expect(await MainActor.run { recorder.received } == ["noted 1", "noted 2", "buy milk\ncall mum"])
        }
    }

    @Test func aReceiverKilledMidSessionEndsTheRoutePausedAndComesBack() async throws {
        try await ReferenceTestBed.run { bed in
            let app = bed.app()
            let recorder = AppObserver()
            #expect(app.addObserver(recorder))
            let changes = app.routeChanges()
            let (tv, media) = try await toneSession(bed, seenBy: recorder, mode: .player)
            #expect(await MainActor.run { media.playbackControl.isPlaying })

            let seen = EventLog<AVSystemRouteChange>()
            Task { for await change in changes { seen.append(change) } }
            await tv.kill9()
            try await bed.harness.waitUntil("route ended", seconds: 15) { await bed.supervisor.activeRoutes().isEmpty }
            try await bed.harness.waitUntil("the app hears oldDeviceUnavailable") { seen.all.contains { $0.reason == .oldDeviceUnavailable } }
            let change = try #require(seen.all.first { $0.reason == .oldDeviceUnavailable })
            #expect(change.message == "Den TV is no longer reachable")
            #expect(change.previousRoute.outputs.map(\.portName) == ["Den TV"])
            #expect(await bed.supervisor.recentEvents.contains("Den TV deactivated: Den TV is no longer reachable"))
            try await bed.harness.waitUntil("app told") { media.hasEnded }
            #expect(media.endReason?.message == "the route to Den TV ended: Den TV is no longer reachable")
            let last = await MainActor.run { media.playbackControl.status }
            #expect(!last.isPlaying && last.state == .paused)

            // Restarted: rediscovered, and it can be activated again.
            try tv.restart()
            try await tv.waitUntilAnnounced()
            let view = PickerView()
            let picker = await bed.supervisor.openPicker { view.update($0) }
            try await bed.waitForPicker(view, ["Den TV"])
            try await bed.activate("Den TV") { _ in nil }
            try await bed.harness.waitUntil("the app sees the route again") { await MainActor.run { recorder.activations == 2 } }
            await bed.supervisor.closePicker(picker.id)
        }
    }
}

/// An app's observer and data delegate, for these tests.
@MainActor
final class AppObserver: AVSystemRouteControllerObserver, AVSystemRouteDataDelegate {
    private(set) var route: AVSystemRoute?
    private(set) var activations = 0
    private(set) var received: [String] = []
    nonisolated init() {}

    func systemRouteController(_ controller: AVSystemRouteController, handle event: AVSystemRouteEvent) async -> Bool {
        if event.reason == .activate {
            route = event.route
            activations += 1
        }
        return true
    }

    func dataChannel(_ channel: AVSystemRouteDataChannel, didReceive data: Data) {
        received.append(String(decoding: data, as: UTF8.self))
    }
}

