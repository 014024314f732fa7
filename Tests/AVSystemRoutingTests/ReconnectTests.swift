import AVSystemRouting
import Foundation
import MediaDevice
@testable import MediaRouteSupervisor
import Testing
import TestSupport

/// Devices that come back: a route whose device went away waits for it within the reconnect
/// window, listed as reconnecting, its session paused; the driver discovers without a picker, and
/// the route is active again by itself when the device is back, its session still paused.
@Suite("AVSystemRouting: devices that come back", .timeLimit(.minutes(2)))
struct ReconnectTests {
    /// An app playing on "Den TV" of org.test.alpha, with its route changes watched.
    private func playing(_ bed: AppTestBed, window: Duration) async throws -> (AppRecorder, AVSystemRoute, AVSystemRouteMediaSession) {
        try bed.harness.addDriver("org.test.alpha", devices: ["Den TV"])
        try await bed.start(reconnectWindow: window)
        let (_, recorder, route) = try await bed.appWithActiveRoute(watchingChanges: true)
        let session = AVSystemRouteSession(url: URL(string: "http://127.0.0.1:9/film.mp4")!, mode: .player)
        #expect(route.addSession(session))
        let media = try await session.start()
        #expect(await media.playbackControl.isPlaying)
        return (recorder, route, media)
    }

    /// "Den TV" (lost first, if asked) is found again while a picker is open: listed, not activated.
    private func foundAgainButNotActivated(_ bed: AppTestBed, losingItFirst: Bool) async throws {
        let view = PickerView()
        let picker = await bed.supervisor.openPicker { view.update($0) }
        if losingItFirst {
            try bed.harness.command("org.test.alpha", "lose:Den TV")
            try await bed.harness.waitForPicker(view, [])
        }
        try bed.harness.command("org.test.alpha", "find:Den TV")
        try await bed.harness.waitForPicker(view, ["Den TV"])
        #expect(await bed.supervisor.activeRoutes().isEmpty)
        await bed.supervisor.closePicker(picker.id)
    }

    private func playingLines(_ bed: AppTestBed) -> Int { bed.harness.log.all.filter { $0.contains("test driver: playing") }.count }

    @Test func aLostDeviceThatComesBackIsActiveAgainWithItsSessionPausedWhereItWas() async throws {
        try await AppTestBed.run { bed in
            let (recorder, route, media) = try await playing(bed, window: .seconds(60))
            try await bed.eventually("the position moves") { media.playbackControl.status.position >= 0.3 }
            try bed.harness.command("org.test.alpha", "lose:Den TV")

            // Reconnecting: the same route, its session paused (not ended), the app told the device went away.
            try await bed.eventually("reconnecting") { if case .reconnecting = route.state { true } else { false } }
            try await bed.eventually("route change") { recorder.changes.last?.reason == .oldDeviceUnavailable }
            let away = try #require(await recorder.changes.last)
            #expect(away.message.hasPrefix("Den TV went away; mediarouted waits for it to come back until"), "\(away.message)")
            #expect(away.previousRoute.outputs.map(\.portName) == ["Den TV"])
            #expect(away.currentRoute.outputs.isEmpty)
            #expect(await recorder.events.count == 1)  // no .deactivate
            #expect(route.isActive)
            try await bed.eventually("paused") { !media.playbackControl.status.isPlaying }
            #expect(!media.hasEnded)
            let parkedAt = await media.playbackControl.status.position
            #expect(parkedAt >= 0.3)
            let listed = try #require(await bed.supervisor.activeRoutes().first)
            #expect(listed.reconnectingUntil != nil)
            #expect(listed.playback?.status.state == .paused)
            // It cannot resume while the device is away; the reason says so.
            await #expect(throws: MediaDeviceError.self) { try await bed.supervisor.setPlayback("Den TV", PlaybackChanges(isPlaying: true)) }
            #expect(await bed.supervisor.recentEvents.contains { $0.hasPrefix("Den TV reconnecting until") })

            // The device is back on the network; no picker is open: the driver discovers for the wait.
            let playedBefore = playingLines(bed)
            try bed.harness.command("org.test.alpha", "find:Den TV")
            try await bed.eventually("back") { route.state == .active }
            try await bed.eventually("route change") { recorder.changes.last?.reason == .newDeviceAvailable }
            #expect(await recorder.changes.last?.message == "Den TV is back")
            #expect(await recorder.changes.last?.currentRoute.outputs.map(\.portName) == ["Den TV"])
            #expect(await recorder.events.count == 1)
            let back = try #require(await bed.supervisor.activeRoutes().first)
            #expect(back.session == route.identifier && back.reconnectingUntil == nil)
            #expect(back.playback?.status.isPlaying == false && back.playback?.status.position == parkedAt)
            #expect(!media.hasEnded)
            #expect(playingLines(bed) == playedBefore, "nothing may start playing by itself")
            // Discovery the wait needed stops with it.
            try await bed.harness.waitUntil("discovery stopped") { await !bed.supervisor.isDiscovering("org.test.alpha") }

            // The app resumes: started on the device again, at its position.
            await MainActor.run { media.playbackControl.isPlaying = true }
            try await media.playbackControl.synchronize()
            try await bed.eventually("playing again") { media.playbackControl.status.isPlaying }
            try await bed.eventually("from where it was") { media.playbackControl.status.position >= parkedAt }
            #expect(playingLines(bed) == playedBefore + 1)
        }
    }

    @Test func aDeviceThatDoesNotComeBackWithinTheWindowIsGoneForGood() async throws {
        try await AppTestBed.run { bed in
            let (recorder, route, media) = try await playing(bed, window: .seconds(1))
            try bed.harness.command("org.test.alpha", "lose:Den TV")
            try await bed.eventually("reconnecting") { if case .reconnecting = route.state { true } else { false } }
            try await bed.eventually("deactivated") { recorder.events.last?.0 == .deactivate }
            try await bed.eventually("gone for good") { recorder.changes.last?.message.hasPrefix("Den TV did not come back by") == true }
            #expect(await recorder.changes.last?.reason == .oldDeviceUnavailable)
            try await bed.eventually("session ended") { media.hasEnded }
            #expect(await media.playbackControl.status.state == .paused)
            #expect(await bed.supervisor.activeRoutes().isEmpty)
            try await foundAgainButNotActivated(bed, losingItFirst: false)
        }
    }

    @Test func anOperatorsDeactivateIsNotReconnected() async throws {
        try await AppTestBed.run { bed in
            let (recorder, _, media) = try await playing(bed, window: .seconds(60))
            try await bed.supervisor.deactivate("Den TV")
            try await bed.eventually("deactivated") { recorder.events.last?.0 == .deactivate }
            try await bed.eventually("route change") { recorder.changes.last?.reason == .override }
            try await bed.eventually("session ended") { media.hasEnded }
            try await foundAgainButNotActivated(bed, losingItFirst: true)
        }
    }

    @Test func aDeviceThatDroppedItsActivationComesBackByItself() async throws {
        try await AppTestBed.run { bed in
            let (recorder, route, media) = try await playing(bed, window: .seconds(60))
            try bed.harness.command("org.test.alpha", "drop:Den TV")
            try await bed.eventually("reconnecting") { recorder.changes.contains { $0.reason == .oldDeviceUnavailable } }
            // Still listed by its driver: tried again shortly, and back.
            try await bed.eventually("back") { recorder.changes.last?.reason == .newDeviceAvailable && route.state == .active }
            #expect(!media.hasEnded)
            #expect(await !media.playbackControl.status.isPlaying)
        }
    }
}

extension Supervisor {
    /// Whether a driver runs discovery now (what a wait for a device needs, without a picker).
    func isDiscovering(_ protocolID: String) -> Bool { fleet.record(protocolID)?.isDiscovering == true }
}
