import DBus
import Foundation
import MediaRouteWire
@testable import MediaRouteSupervisor
import PrivateDaemons
import Testing
import TestSupport

/// Route sessions on the desktop: each is an MPRIS player on a private session bus, read and
/// controlled with the real `playerctl`, its changes signalled to a client of our own.
@Suite("MPRIS: route sessions on the desktop", .serialized)
struct MPRISBridgeTests {
    static let device = "Den TV"

    /// Runs `body` with the test driver's TV active on a supervisor that shows sessions on `bus`.
    func withActiveTV(_ body: (SupervisorHarness, Supervisor, PrivateBus) async throws -> Void) async throws {
        let bus = try PrivateBus(kind: .session)
        defer { bus.stop() }
        try await SupervisorHarness.run { harness in
            try harness.addDriver("org.test.tv", devices: [Self.device])
            let supervisor = try await harness.start(mprisBusAddress: bus.address)
            _ = try await supervisor.activate(Self.device) { _ in nil }
            try await body(harness, supervisor, bus)
        }
    }

    func playerctl(_ bus: PrivateBus, _ arguments: [String]) async throws -> String {
        let run = try await CapturedCommand.run("/usr/bin/playerctl", arguments, environment: ["DBUS_SESSION_BUS_ADDRESS": bus.address], timeout: .seconds(15))
        return run.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func route(_ supervisor: Supervisor) async -> RouteDescription? { await supervisor.activeRoutes().first }

    @Test func aSessionIsAPlayerThatPlayerctlShowsAndControls() async throws {
        try await withActiveTV { harness, supervisor, bus in
            // Active, nothing playing: no player.
            let none = try await playerctl(bus, ["-l"])
            #expect(none == "No players found", "\(none)")
            let started = try await supervisor.startSession(Self.device, url: "http://127.0.0.1:9/Evening%20News.mp4")
            let name = "mediaroute." + MPRISState.pathElement(started.session)
            try await harness.waitUntil("the player on the bus") { (try? await playerctl(bus, ["-l"])) == name }
            // The title the device reports (the test driver's), the URL's name only when it reports none.
            let title = try await playerctl(bus, ["-p", name, "metadata", "title"])
            #expect(title == "Test Pattern", "\(title)")
            #expect(try await playerctl(bus, ["-p", name, "metadata", "xesam:url"]) == "http://127.0.0.1:9/Evening%20News.mp4")
            #expect(try await playerctl(bus, ["-p", name, "metadata", "mpris:length"]) == "60000000")
            #expect(try await playerctl(bus, ["-p", name, "status"]) == "Playing")

            // Its buttons reach the device.
            _ = try await playerctl(bus, ["-p", name, "pause"])
            try await harness.waitUntil("paused at the device") { await route(supervisor)?.playback?.status.state == .paused }
            #expect(try await playerctl(bus, ["-p", name, "status"]) == "Paused")
            _ = try await playerctl(bus, ["-p", name, "play"])
            try await harness.waitUntil("playing at the device") { await route(supervisor)?.playback?.status.isPlaying == true }
            _ = try await playerctl(bus, ["-p", name, "position", "30"])
            try await harness.waitUntil("sought at the device") { (await route(supervisor)?.playback?.status.position ?? 0) >= 30 }
            let position = Double(try await playerctl(bus, ["-p", name, "position"])) ?? 0
            #expect(position >= 30 && position < 40, "playerctl says \(position)")
            _ = try await playerctl(bus, ["-p", name, "volume", "0.25"])
            try await harness.waitUntil("the volume at the device") { await route(supervisor)?.volume == 0.25 }
            #expect(try await playerctl(bus, ["-p", name, "volume"]).hasPrefix("0.25"))

            // Stopped, the player leaves the bus.
            _ = try await playerctl(bus, ["-p", name, "stop"])
            try await harness.waitUntil("the player gone") { (try? await playerctl(bus, ["-l"])) == "No players found" }
            #expect(await route(supervisor)?.playback == nil)
        }
    }

    @Test func changesAreSignalledToClientsAndARouteThatEndsTakesItsPlayerAway() async throws {
        try await withActiveTV { harness, supervisor, bus in
            let client = try await DBusConnection.connect(address: bus.address)
            let started = try await supervisor.startSession(Self.device, url: "http://127.0.0.1:9/clip.mp4")
            let name = "org.mpris.MediaPlayer2.mediaroute." + MPRISState.pathElement(started.session)
            try await harness.waitUntil("the player on the bus") { (try? await client.nameHasOwner(name)) == true }
            let signals = try await client.signals(matching: DBusMatchRule(sender: name, path: "/org/mpris/MediaPlayer2"))
            let seen = EventLog<DBusSignal>()
            let reading = Task { for await signal in signals { seen.append(signal) } }
            defer { reading.cancel() }

            _ = try await supervisor.setPlayback(Self.device, PlaybackChanges(isPlaying: false))
            try await harness.waitUntil("PlaybackStatus Paused signalled") {
                seen.all.contains { PropertiesChangedSignal($0)?.changed["PlaybackStatus"]?.string == "Paused" }
            }
            _ = try await supervisor.setPlayback(Self.device, PlaybackChanges(position: 45))
            try await harness.waitUntil("Seeked signalled") { seen.all.contains { $0.member == "Seeked" && ($0.arguments.first?.int64 ?? 0) >= 45_000_000 } }
            _ = try await supervisor.volume(Self.device, .set(0.5))
            try await harness.waitUntil("Volume signalled") { seen.all.contains { PropertiesChangedSignal($0)?.changed["Volume"]?.double == 0.5 } }

            // A route plays one item: Next is refused with a sentence, and says so beforehand.
            let path: DBusObjectPath = "/org/mpris/MediaPlayer2", player = "org.mpris.MediaPlayer2.Player"
            #expect(try await client.property("CanGoNext", of: player, at: path, on: name).bool == false)
            await #expect(throws: DBusError.self) { try await client.call(destination: name, path: path, interface: player, method: "Next") }
            // Rate 0 pauses, as MPRIS has it.
            _ = try await supervisor.setPlayback(Self.device, PlaybackChanges(isPlaying: true))
            try await client.setProperty("Rate", of: player, at: path, on: name, to: .double(0))
            try await harness.waitUntil("paused by Rate 0") { await route(supervisor)?.playback?.status.isPlaying == false }
            // Another URL is another track: a position for the old one is ignored.
            let oldTrack = try #require(try await client.property("Metadata", of: player, at: path, on: name).properties?["mpris:trackid"]?.objectPath)
            _ = try await supervisor.startSession(Self.device, url: "http://127.0.0.1:9/other.mp4")
            try await harness.waitUntil("a new track id") {
                (try? await client.property("Metadata", of: player, at: path, on: name).properties?["mpris:trackid"]?.objectPath).flatMap { $0 } != oldTrack
            }
            let before = await route(supervisor)?.playback?.status.position ?? 0
            _ = try await client.call(destination: name, path: path, interface: player, method: "SetPosition", [.objectPath(oldTrack), .int64(50_000_000)])
            #expect((await route(supervisor)?.playback?.status.position ?? 0) < before + 5)

            try await supervisor.deactivate(Self.device)
            try await harness.waitUntil("the player gone") { (try? await client.nameHasOwner(name)) == false }
            await client.close()
        }
    }

    @Test func withoutABusTheSupervisorRunsAndSaysSo() async throws {
        try await SupervisorHarness.run { harness in
            try harness.addDriver("org.test.tv", devices: [Self.device])
            let supervisor = try await harness.start(mprisBusAddress: "unix:path=/nonexistent/mediaroute-test-bus")
            _ = try await supervisor.activate(Self.device) { _ in nil }
            _ = try await supervisor.startSession(Self.device, url: "http://127.0.0.1:9/clip.mp4")
            try await harness.waitUntil("the failure logged") { harness.log.contains("MPRIS: cannot show \(Self.device) on the session bus") }
            #expect(await supervisor.activeRoutes().first?.playback?.status.isPlaying == true)
        }
    }

    @Test func theStateNamesTheURLWhenTheDeviceGivesNoTitleAndSaysWhatChanged() throws {
        let device = try #require(MediaOutputDevice(id: "tv", displayName: "Den TV", capabilities: [.urlPlayback], deviceType: .tv, volumeControl: .absolute, canMute: true))
        var status = PlaybackStatus()
        (status.isPlaying, status.state, status.position) = (true, .playing, 10)
        func route(_ status: PlaybackStatus, revision: Int64) -> RouteDescription {
            RouteDescription(session: "1st/session", protocol: "org.test.tv", protocolName: "Test", device: device, simultaneousSessions: false, busy: true,
                             parent: nil, application: nil, url: "http://host/shows/Late%20Film.mkv", playback: SessionPlayback(status: status, revision: revision),
                             volume: 0.5, muted: false, streams: nil)
        }
        let shown = MPRISState(route: route(status, revision: 1))
        let item = shown.item, track = shown.trackBase.appending("0")
        #expect(item.metadata(track: track).properties?["xesam:title"]?.string == "Late Film.mkv")
        #expect(track == "/org/mediaroute/session/_1st_session/0")
        // What a lying driver reports cannot trap the conversion to microseconds.
        #expect(MPRISItem.microseconds(1e300) == 3_600_000_000_000_000 && MPRISItem.microseconds(-5) == 0 && MPRISItem.microseconds(.nan) == 0)
        #expect(item.status == .playing && MPRISItem.microseconds(item.position) == 10_000_000 && item.volume == 0.5 && !item.canSeek)
        #expect(item.identity == "Den TV" && !item.canGoNext && !item.canGoPrevious)
        // Playing on, the position moves on at the rate.
        #expect(abs(item.position(at: shown.receivedAt + .seconds(2)) - 12) < 1e-9)
        func changed(_ before: MPRISItem, _ after: MPRISItem) -> [String] {
            let old = before.signalled(track: track, rates: MPRISItem.settableRates)
            return after.signalled(track: track, rates: MPRISItem.settableRates).filter { old[$0.key] != $0.value }.keys.sorted()
        }
        // Playing on by two seconds is no jump; paused and moved on by a minute is a seek.
        var later = status
        later.position = 12
        let playedOn = shown.taking(route(later, revision: 2), at: shown.receivedAt + .seconds(2)).item
        #expect(changed(item, playedOn).isEmpty)
        #expect(!item.jumped(to: playedOn))
        (later.isPlaying, later.state, later.position) = (false, .paused, 72)
        let paused = shown.taking(route(later, revision: 3), at: shown.receivedAt + .seconds(2)).item
        #expect(changed(item, paused) == ["PlaybackStatus"])
        #expect(item.jumped(to: paused))
        // A state older than the one shown does not replace it, nor when it came.
        let crossed = shown.taking(route(later, revision: 0), at: shown.receivedAt + .seconds(5))
        #expect(crossed.playback?.revision == 1 && crossed.receivedAt == shown.receivedAt)
    }
}
