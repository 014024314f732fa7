import AVSystemRouting
import Foundation
import MediaDevice
@testable import MediaRouteSupervisor
import Testing
import TestSupport

/// A real receiver that goes away mid-session and comes back within the reconnect window: the route
/// waits for it and is active again by itself, the session paused where it was until resumed.
@Suite("Reference protocol: a receiver that comes back", .serialized, .timeLimit(.minutes(3)))
struct ReceiverReconnectTests {
    @Test func aReceiverKilledAndRestartedMidSessionComesBackPausedAtItsPosition() async throws {
        try await ReferenceTestBed.run(reconnectWindow: .seconds(120)) { bed in
            let app = bed.app()
            let recorder = AppObserver()
            #expect(app.addObserver(recorder))
            let changes = app.routeChanges()
            let seen = EventLog<AVSystemRouteChange>()
            Task { for await change in changes { seen.append(change) } }
            let tv = try await bed.listedReceiver(arguments: ["--auth", "none"])
            try await bed.activate("Den TV") { _ in nil }
            try await bed.harness.waitUntil("app has the route") { await MainActor.run { recorder.route != nil } }
            let route = try #require(await MainActor.run { recorder.route })
            let session = AVSystemRouteSession(url: URL(string: bed.media.url("tone.wav"))!, mode: .player)
            #expect(route.addSession(session))
            let media = try await session.start()
            try await bed.harness.waitUntil("playing a while") { await MainActor.run { media.playbackControl.status.position } >= 1 }

            await tv.kill9()
            try await bed.harness.waitUntil("reconnecting", seconds: 15) { if case .reconnecting = route.state { true } else { false } }
            try await bed.harness.waitUntil("the app hears the device went away") { seen.all.contains { $0.reason == .oldDeviceUnavailable } }
            try await bed.harness.waitUntil("paused") { await MainActor.run { !media.playbackControl.status.isPlaying } }
            #expect(!media.hasEnded)
            let parkedAt = try #require(await bed.playback("Den TV")).position
            #expect(parkedAt >= 1)

            // Restarted: found by the driver's own discovery (no picker is open) and activated again.
            try tv.restart()
            try await tv.waitUntilAnnounced()
            try await bed.harness.waitUntil("back", seconds: 20) { route.state == .active }
            try await bed.harness.waitUntil("the app hears it is back") { seen.all.contains { $0.reason == .newDeviceAvailable } }
            #expect(await MainActor.run { recorder.activations } == 1)
            let back = try #require(await bed.playback("Den TV"))
            #expect(!back.isPlaying && back.state == .paused && back.position == parkedAt)
            try await tv.statusShows("nothing playing")

            // Resumed by the app: the receiver plays the tone again, from where it was. Said as it
            // starts: what is left of the 4 s tone may end before a status line is asked for.
            let resumed = tv.output.utf8.count
            await MainActor.run { media.playbackControl.isPlaying = true }
            try await media.playbackControl.synchronize()
            try await tv.waitFor("playing \(bed.media.url("tone.wav"))", after: resumed)
            try await bed.harness.waitUntil("from its position") { await MainActor.run { media.playbackControl.status.position } >= parkedAt }
        }
    }
}
