import AVSystemRouting
import Foundation
import MediaDevice
@testable import MediaRouteSupervisor
import Testing
import TestSupport

/// The privacy rule made real for remote routes: when a device goes away, what played on it
/// pauses, apps hear `oldDeviceUnavailable` with the previous route, and nothing moves elsewhere.
@Suite("AVSystemRouting: route changes", .timeLimit(.minutes(2)))
struct RouteChangeTests {
    /// A route with a session playing, and the app watching.
    private func playing(_ bed: AppTestBed) async throws -> (AVSystemRouteController, AppRecorder, AVSystemRouteMediaSession) {
        let (controller, recorder, route) = try await bed.appWithActiveRoute(watchingChanges: true)
        let session = AVSystemRouteSession(url: URL(string: "http://127.0.0.1:9/film.mp4")!, mode: .player)
        #expect(route.addSession(session))
        let media = try await session.start()
        #expect(await media.playbackControl.isPlaying)
        return (controller, recorder, media)
    }

    @Test func aDeviceLostByDiscoveryPausesItsPlaybackAndTellsTheApp() async throws {
        try await AppTestBed.run { bed in
            try bed.harness.addDriver("org.test.alpha", devices: ["Den TV", "Hall TV"])
            try await bed.start()
            let (controller, recorder, media) = try await playing(bed)
            try bed.harness.command("org.test.alpha", "lose:Den TV")

            try await bed.eventually("deactivated") { recorder.events.count == 2 }
            try await bed.eventually("route change") { recorder.changes.count == 2 }
            let change = await recorder.changes[1]
            #expect(change.reason == .oldDeviceUnavailable)
            #expect(change.message == "Den TV is no longer reachable")
            #expect(change.previousRoute.outputs.map(\.portName) == ["Den TV"])
            #expect(change.previousRoute.outputs.first?.portType == .tv)
            #expect(change.currentRoute.outputs.isEmpty)
            #expect(controller.activeRoutes.isEmpty)
            // Paused, not playing somewhere else; commands now fail with the reason.
            try await bed.eventually("session ended") { media.hasEnded }
            let status = await media.playbackControl.status
            #expect(!status.isPlaying && status.state == .paused)
            #expect(media.endReason?.message == "the route to Den TV ended: Den TV is no longer reachable")
            await MainActor.run { media.playbackControl.isPlaying = true }
            await #expect(throws: AVSystemRoutingError.self) { try await media.playbackControl.synchronize() }
            // The supervisor asked the driver to pause, then to deactivate.
            #expect(await bed.supervisor.activeRoutes().isEmpty)
            #expect(await bed.supervisor.recentEvents.contains("Den TV deactivated: Den TV is no longer reachable"))
            try await bed.eventually("the driver deactivated the device") { bed.harness.log.contains("test driver: deactivated Den TV") }
            let said = bed.harness.log.all
            let paused = said.firstIndex { $0.contains("[org.test.alpha] test driver: paused") }
            let deactivated = said.firstIndex { $0.contains("[org.test.alpha] test driver: deactivated Den TV") }
            #expect(paused != nil && deactivated != nil && paused! < deactivated!, "\(said.suffix(20))")
        }
    }

    @Test func aDriverCrashEndsTheRouteWithTheSignalAndPauses() async throws {
        try await AppTestBed.run(driver: "org.test.alpha", devices: ["Den TV"]) { bed in
            let (_, recorder, media) = try await playing(bed)
            try bed.harness.command("org.test.alpha", "segv")
            try await bed.eventually("route change") { recorder.changes.count == 2 }
            let change = await recorder.changes[1]
            #expect(change.reason == .oldDeviceUnavailable)
            #expect(change.message.hasPrefix("driver org.test.alpha killed by signal 11"), "\(change.message)")
            try await bed.eventually("session ended") { media.hasEnded }
            #expect(await media.playbackControl.status.state == .paused)
        }
    }

    @Test func aDeviceSideVolumeChangeReachesTheApp() async throws {
        try await AppTestBed.run(driver: "org.test.alpha", devices: ["Den TV"]) { bed in
            let (_, recorder, media) = try await playing(bed)
            try bed.harness.command("org.test.alpha", "volume:0.3")
            // The route's volume, as a configuration change, and the session's volume on its own cadence.
            try await bed.eventually("volume on the route") { recorder.activeRoute?.volume == 0.3 }
            try await bed.eventually("configuration change") { recorder.changes.last?.reason == .routeConfigurationChange }
            try await bed.eventually("volume in the session") { media.playbackControl.volume == 0.3 }
        }
    }

    @Test func aSessionTheDeviceCannotContinueEndsWithItsReason() async throws {
        try await AppTestBed.run(driver: "org.test.alpha", devices: ["Den TV"]) { bed in
            let (controller, _, media) = try await playing(bed)
            try bed.harness.command("org.test.alpha", "fail-sessions")
            try await bed.eventually("session ended") { media.hasEnded }
            #expect(media.endReason?.message == "the media stopped: decoder error")
            #expect(await media.playbackControl.status.state == .failed)
            // The route itself stays, free for a new session.
            let route = try #require(controller.activeRoutes.first)
            try await waitUntil("route free") { route.addSession(AVSystemRouteSession(url: URL(string: "http://127.0.0.1:9/again.mp4")!, mode: .player)) }
        }
    }
}
