import Foundation
import Glibc
import MediaDevice
import MediaRouteIPC
@testable import MediaRouteSupervisor
import PrivateDaemons
import Testing
import TestSupport

/// Devices remembered across rediscovery, driver restarts and `kill -9` of the daemon: volume and
/// mute restored at activation before anything plays, nicknames, and routes that come back with
/// their sessions paused where they were.
@Suite("Devices remembered, and routes that come back", .timeLimit(.minutes(2)))
struct RememberedDevicesTests {
    @Test func aRememberedVolumeIsRestoredAtActivationBeforeTheRouteIsAnnounced() async throws {
        try await SupervisorHarness.run { harness in
            try harness.addDriver("org.test.alpha", devices: ["Den TV"])
            let supervisor = try await harness.start()
            _ = try await supervisor.activate("Den TV") { _ in nil }
            #expect(try await supervisor.volume("Den TV", .set(0.2)).volume == 0.2)
            try await supervisor.deactivate("Den TV")
            // Someone turns the device's own knob up while it is not a route: not remembered.
            try harness.command("org.test.alpha", "volume:1")
            try await harness.waitUntil("the knob turned") { harness.log.contains("test driver: command volume:1") }
            let route = try await supervisor.activate("Den TV") { _ in nil }
            #expect(route.volume == 0.2 && route.muted == false)
            let log = harness.log.all
            let restored = try #require(log.lastIndex { $0.contains("Den TV: restored its remembered volume 20%") })
            let active = try #require(log.lastIndex { $0.contains("route active: Den TV") })
            #expect(restored < active)
            #expect(try await supervisor.volume("Den TV", .get).volume == 0.2)
        }
    }

    @Test func volumeAndNicknameSurviveAKill9OfTheDaemon() async throws {
        try await DaemonHarness.run { harness in
            try harness.drivers.addDriver("org.test.alpha", devices: ["Den TV"])
            try await harness.start()
            _ = await harness.cli(["devices", "--until", "1", "--wait", "30"])
            let renamed = await harness.cli(["rename", "Den TV", "Sofa TV"])
            #expect(renamed.output == "Den TV is now shown as Sofa TV\n", "\(renamed.error)")
            let devices = await harness.cli(["devices", "--until", "1", "--wait", "30", "--json"])
            #expect(devices.json?.arrayValue?.compactMap { $0.objectValue?["name"]?.stringValue } == ["Sofa TV"])
            #expect(await harness.cli(["activate", "sofa tv"]).status == .exited(0))
            #expect(await harness.cli(["volume", "Sofa TV", "20"]).status == .exited(0))
            #expect(await harness.cli(["sessions"]).output.contains("Sofa TV"))

            let daemon = try #require(harness.daemon)
            kill(daemon.pid, SIGKILL)
            _ = await daemon.exitStatus()
            try await harness.start()
            // A fresh driver (its device at its own 50%), the device under its nickname, the volume restored.
            let activated = await harness.cli(["--json", "activate", "Sofa TV"])
            #expect(activated.json?.objectValue?["device"]?.objectValue?["displayName"] == "Sofa TV", "\(activated.error)")
            #expect(activated.json?.objectValue?["volume"] == .double(0.2))
            #expect(await harness.cli(["volume", "Sofa TV", "--json"]).json?.objectValue?["volume"] == .double(0.2))

            let cleared = await harness.cli(["rename", "Sofa TV", "--clear"])
            #expect(cleared.output == "Sofa TV has its own name again\n", "\(cleared.error)")
            #expect(await harness.cli(["sessions"]).output.contains("Den TV"))
            #expect(await harness.cli(["rename", "Den TV"]).status != .exited(0))
        }
    }

    @Test func aPlayingRouteComesBackPausedAtItsSavedPositionAfterAKill9() async throws {
        try await DaemonHarness.run { harness in
            try harness.drivers.addDriver("org.test.alpha", devices: ["Den TV"])
            try await harness.start(["--reconnect-window", "60"])
            #expect(await harness.cli(["play", "http://127.0.0.1:9/film.mp4", "--to", "Den TV"]).status == .exited(0))
            // What the daemon saved while it played: a position, at most five seconds old.
            let saved = harness.drivers.state + "/routes.json"
            func savedSession() -> JSONObject? {
                FileManager.default.contents(atPath: saved).flatMap { try? JSONReader.parse(Array($0)) }?.arrayValue?.first?
                    .objectValue?["session"]?.objectValue
            }
            try await waitUntil("a position saved", seconds: 30) { (savedSession()?["state"]?.objectValue?["position"]?.doubleValue ?? 0) > 0 }
            let session = try #require(savedSession())
            let position = try #require(session["state"]?.objectValue?["position"]?.doubleValue)
            #expect(session["url"] == "http://127.0.0.1:9/film.mp4")

            let daemon = try #require(harness.daemon)
            kill(daemon.pid, SIGKILL)
            _ = await daemon.exitStatus()
            func timesPlayed() -> Int { harness.log.components(separatedBy: "test driver: playing").count - 1 }
            let played = timesPlayed()
            try await harness.start(["--reconnect-window", "60"])
            func route() async -> JSONObject? { await harness.cli(["sessions", "--json"]).json?.objectValue?["routes"]?.arrayValue?.first?.objectValue }
            try await waitUntil("the route is back") { await route().map { $0["reconnectingUntil"] == nil } ?? false }
            let back = try #require(await route())
            let playback = try #require(back["playback"]?.objectValue)
            #expect(playback["isPlaying"] == false && playback["state"] == "paused")
            #expect(playback["position"]?.doubleValue == position)
            #expect(back["url"] == "http://127.0.0.1:9/film.mp4")
            #expect(timesPlayed() == played, "nothing may start playing by itself")
            let status = await harness.cli(["status"])
            #expect(status.output.contains("paused"), "\(status.output)")

            // Resumed by the operator: started on the device again, from where it was.
            let resumed = await harness.cli(["resume", "--on", "Den TV", "--json"])
            let state = resumed.json?.objectValue?["playback"]?.objectValue
            #expect(state?["isPlaying"] == true, "\(resumed.error)")
            #expect((state?["position"]?.doubleValue ?? 0) >= position)
        }
    }
}
