import Foundation
import MediaRouteIPC
import MediaRouteWire
@testable import MediaRouteSupervisor
import NowPlaying
import PrivateDaemons
import Testing
import TestSupport

/// Remote sessions on the desktop: each is an MPRIS player on a private session bus, read and
/// controlled with the real `playerctl`, its buttons reaching the extension and its device.
@Suite("NowPlaying: remote sessions as MPRIS players", .serialized)
struct RemoteSessionDesktopTests {
    /// A 1×1 PNG: the artwork the test speaker's backend serves.
    static let png = Data(base64Encoded: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")!

    func playerctl(_ bus: PrivateBus, _ arguments: [String]) async throws -> String {
        let run = try await CapturedCommand.run("/usr/bin/playerctl", arguments, environment: ["DBUS_SESSION_BUS_ADDRESS": bus.address], timeout: .seconds(15))
        return run.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func aRemoteSessionShowsOnTheDesktopAndItsButtonsReachTheDevice() async throws {
        let bus = try PrivateBus(kind: .session)
        defer { bus.stop() }
        try await RemoteSessionTestBed.run(mprisBusAddress: bus.address) { bed in
            let art = bed.harness.root + "/cover.png"
            try Self.png.write(to: URL(fileURLWithPath: art))
            var attributes = SpeakerAttributes.playing("desk", index: 1)
            attributes.currentTrack?.artworkURL = URL(fileURLWithPath: art).absoluteString
            let session = try await RemoteMediaSession.start(attributes: attributes, controller: bed.controller)
            let name = "mediaroute.remote_1"
            try await bed.harness.waitUntil("the player on the bus") { (try? await playerctl(bus, ["-l"])) == name }
            #expect(try await playerctl(bus, ["-p", name, "metadata", "title"]) == "Song Title")
            #expect(try await playerctl(bus, ["-p", name, "metadata", "artist"]) == "Name of Artist")
            #expect(try await playerctl(bus, ["-p", name, "metadata", "album"]) == "Title of the Album")
            #expect(try await playerctl(bus, ["-p", name, "metadata", "mpris:length"]) == "237000000")
            #expect(try await playerctl(bus, ["-p", name, "status"]) == "Playing")
            // The artwork, asked of the extension and kept in a file the desktop reads.
            try await bed.harness.waitUntil("the art URL") { (try? await playerctl(bus, ["-p", name, "metadata", "mpris:artUrl"]))?.hasPrefix("file://") == true }
            let shownArt = try await playerctl(bus, ["-p", name, "metadata", "mpris:artUrl"])
            #expect(FileManager.default.contents(atPath: try #require(URL(string: shownArt)).path) == Self.png)

            // Buttons: to the extension's command closures, and from them to the device.
            _ = try await playerctl(bus, ["-p", name, "pause"])
            try await bed.harness.waitUntil("paused, as the device echoes") { (try? await playerctl(bus, ["-p", name, "status"])) == "Paused" }
            _ = try await playerctl(bus, ["-p", name, "play"])
            _ = try await playerctl(bus, ["-p", name, "next"])
            _ = try await playerctl(bus, ["-p", name, "previous"])
            _ = try await playerctl(bus, ["-p", name, "position", "30"])
            _ = try await playerctl(bus, ["-p", name, "volume", "0.25"])
            try await bed.harness.waitUntil("every command at the device") { bed.commands.count == 6 }
            #expect(bed.commands == ["pause", "play", "next", "previous", "seek 30.0", "volume living-room-speaker 0.25"])
            try await bed.harness.waitUntil("the volume shown") { (try? await playerctl(bus, ["-p", name, "volume"])) == "0.250000" }

            // System-primary: the stable name, and `mediaroute nowplaying` says so.
            try await session.requestToBecomeSystemPrimary()
            try await bed.harness.waitUntil("the stable name") { (try? await playerctl(bus, ["-l"])) == "mediaroute" }
            let listed = await bed.supervisor.nowPlaying()
            #expect(listed.count == 1 && listed.first?.systemPrimary == true && listed.first?.mprisName == "org.mpris.MediaPlayer2.mediaroute", "\(listed)")

            // An update from a push reaches the desktop; the end removes the player.
            let token = try #require(try await bed.controller.request(App.RemoteSessions()).sessions.first?.pushToken)
            #expect(try await bed.push(RemoteSessionTestBed.aps("update", .playing("desk", title: "From The Server"), timestamp: 2_000_000_000), to: token).status == 200)
            try await bed.harness.waitUntil("the pushed title") { (try? await playerctl(bus, ["-p", "mediaroute", "metadata", "title"])) == "From The Server" }
            try await session.end()
            try await bed.harness.waitUntil("no player") { (try? await playerctl(bus, ["-l"])) == "No players found" }
            #expect(!FileManager.default.fileExists(atPath: try #require(URL(string: shownArt)).path), "the artwork file goes with the session")
        }
    }

    @Test func aCrashedExtensionsSessionComesBackOnTheDesktop() async throws {
        let bus = try PrivateBus(kind: .session)
        defer { bus.stop() }
        try await RemoteSessionTestBed.run(mprisBusAddress: bus.address) { bed in
            _ = try await RemoteMediaSession.start(attributes: SpeakerAttributes.playing("phoenix"), controller: bed.controller)
            let name = "mediaroute.remote_1"
            try await bed.harness.waitUntil("the player") { (try? await playerctl(bus, ["-l"])) == name }
            try await bed.crashExtension(remaking: "phoenix")
            #expect(try await playerctl(bus, ["-l"]) == name, "the same player")
            let paused = try await playerctl(bus, ["-p", name, "pause"])
            #expect(paused.isEmpty, "\(paused)")
            try await bed.harness.waitUntil("pause at the new process's device") { bed.commands == ["pause"] }
            #expect(try await playerctl(bus, ["-p", name, "status"]) == "Paused")
        }
    }
}
