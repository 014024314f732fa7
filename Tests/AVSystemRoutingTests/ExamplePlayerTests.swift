import Foundation
import MediaRouteIPC
import PrivateDaemons
@testable import MediaRouteSupervisor
import Testing
import TestSupport

/// `mediaroute-player`, the example app, as a real process: the operator activates a device, the
/// player starts on it, obeys commands on its standard input, and talks to the device's application.
@Suite("The example player", .timeLimit(.minutes(2)))
struct ExamplePlayerTests {
    /// The player process, driven through its console.
    final class Player: @unchecked Sendable {
        let console: ConsoleProcess
        init(_ bed: AppTestBed, arguments: [String]) throws {
            console = try ConsoleProcess(DaemonHarness.binary("mediaroute-player"), ["--socket", bed.socket] + arguments,
                                         logPath: bed.harness.root + "/player.out")
            bed.adopt(console)
        }
        var process: ChildProcess { console.process }
        var output: String { console.output }
        func say(_ line: String) { console.type(line) }
        func waitFor(_ text: String) async throws { try await console.waitFor(text) }
    }

    @Test func thePlayerPlaysOnTheRouteAPersonActivatedAndObeys() async throws {
        try await AppTestBed.run(driver: "org.test.alpha", devices: ["Den TV"]) { bed in
            let player = try Player(bed, arguments: ["--protocol", "org.test.alpha", "--app-id", "org.test.notes", "--mode", "application",
                                                     "http://127.0.0.1:9/film.mp4"])
            try await player.waitFor("waiting for a route of org.test.alpha")
            try await bed.discover(["Den TV"])
            try await bed.activate("Den TV")
            try await player.waitFor("route active: Den TV through Test alpha")
            try await player.waitFor("session started: ")
            try await player.waitFor("(application org.test.notes)")
            try await player.waitFor("state: playing")
            player.say("send hello")
            try await player.waitFor("data: olleh")
            player.say("pause")
            try await player.waitFor("state: paused")
            player.say("seek 30")
            try await player.waitFor("paused position 30.0/60.0 s")
            player.say("volume 20")
            try await player.waitFor("volume 20%")
            player.say("teleport")
            try await player.waitFor("error: unknown command \"teleport\"")
            player.say("quit")
            #expect(await player.process.exitStatus() == .exited(0))
            try await player.waitFor("stopped")
            // The session stopped; the route the person activated stays.
            let routes = await bed.supervisor.activeRoutes()
            #expect(routes.count == 1 && routes.first?.playback == nil)
        }
    }

    @Test func anAppThatDisconnectsHasItsSessionsStopped() async throws {
        try await AppTestBed.run(driver: "org.test.alpha", devices: ["Den TV"]) { bed in
            try await bed.discover(["Den TV"])
            try await bed.activate("Den TV")
            let player = try Player(bed, arguments: ["--protocol", "org.test.alpha", "http://127.0.0.1:9/film.mp4"])
            try await player.waitFor("state: playing")
            // A .player session has no data channel of its own; the route's channel works.
            player.say("send hi")
            try await player.waitFor("error: a .player session has no data channel; use route-send")
            player.say("route-send hi")
            try await player.waitFor("route data: ih")
            #expect(await bed.supervisor.activeRoutes().first?.playback != nil)
            kill(player.process.pid, SIGKILL)
            _ = await player.process.exitStatus()
            try await waitUntil("session stopped") { await bed.supervisor.activeRoutes().first?.playback == nil }
            #expect(await bed.supervisor.activeRoutes().first?.busy == false)
        }
    }

    @Test func thePlayerSaysWhenNoDaemonRuns() async throws {
        try await AppTestBed.run { bed in
            let player = try Player(bed, arguments: ["--protocol", "org.test.alpha", "http://127.0.0.1:9/film.mp4"])
            #expect(await player.process.exitStatus() == .exited(1))
            #expect(player.output.contains("mediarouted is not running (nothing listens on \(bed.socket)); start it first"))
        }
    }
}
