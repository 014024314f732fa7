import Foundation
import MediaRouteIPC
import PrivateDaemons
import Testing
import TestSupport

/// The desktop's media controls over a real device: the example app's session on a reference
/// receiver is an MPRIS player, and `playerctl`'s pause pauses the receiver.
@Suite("Reference protocol: the example app on the desktop", .timeLimit(.minutes(2)))
struct DesktopTests {
    @Test func theExampleAppsSessionIsOnTheDesktopAndItsPauseReachesTheReceiver() async throws {
        let bus = try PrivateBus(kind: .session)
        defer { bus.stop() }
        try await ReferenceTestBed.run(mprisBusAddress: bus.address) { bed in
            let tv = try await bed.listedReceiver(arguments: ["--auth", "none"])
            try await bed.activate("Den TV") { _ in nil }
            let player = try ConsoleProcess(DaemonHarness.binary("mediaroute-player"),
                                            ["--socket", bed.socket, "--protocol", ReferenceTestBed.protocolID, bed.media.url("tone.wav")],
                                            logPath: bed.harness.root + "/player.out")
            try await withTearDown {
                try await player.waitFor("state: playing")
                try await tv.waitFor("playing \(bed.media.url("tone.wav"))")
                func playerctl(_ arguments: [String]) async -> String {
                    let run = try? await CapturedCommand.run("/usr/bin/playerctl", arguments, environment: ["DBUS_SESSION_BUS_ADDRESS": bus.address],
                                                             timeout: .seconds(15))
                    return run?.output.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
                }
                try await bed.harness.waitUntil("the player on the bus") { await playerctl(["-l"]).hasPrefix("mediaroute.") }
                let name = await playerctl(["-l"])
                #expect(await playerctl(["-p", name, "metadata", "title"]) == "Test Tone")
                _ = await playerctl(["-p", name, "pause"])
                try await tv.statusShows(": paused at ")
                try await player.waitFor("state: paused")
                player.type("quit")
                #expect(await player.process.exitStatus() == .exited(0))
                try await bed.harness.waitUntil("the player gone from the bus") { await playerctl(["-l"]) == "No players found" }
            } tearDown: {
                await player.stop()
            }
        }
    }
}
