import DBus
import Foundation
import MediaRouteWire
@testable import MediaRouteSupervisor
import PrivateDaemons
import Testing
import TestSupport

/// Remote media sessions on the desktop: the bridge driven in-process (no supervisor), each
/// session a player on a private session bus, read and controlled with the real `playerctl`,
/// watched with a client of our own.
@Suite("MPRIS: remote media sessions on the desktop", .serialized, .timeLimit(.minutes(3)))
struct MPRISRemoteSessionTests {
    static let path: DBusObjectPath = "/org/mpris/MediaPlayer2"
    static let player = "org.mpris.MediaPlayer2.Player"

    /// A bridge on a private session bus, a client of the bus, and what the bridge logged; all
    /// stopped afterwards.
    func withBridge(_ body: (MPRISBridge, PrivateBus, DBusConnection, LogCapture) async throws -> Void) async throws {
        let bus = try await PrivateBus.start(kind: .session)
        let log = LogCapture()
        // A route session's buttons (playerctl shows the metadata of players that can play only).
        let bridge = MPRISBridge(address: bus.address, logger: log.logger) { _ in MPRISPlayer.Commands(play: {}, pause: {}) }
        var client: DBusConnection?
        try await withTearDown {
            client = try await DBusConnection.connect(address: bus.address)
            try await body(bridge, bus, try #require(client), log)
        } tearDown: {
            await bridge.stop()
            await client?.close()
            await bus.stopFromTask()
        }
    }

    func playerctl(_ bus: PrivateBus, _ arguments: [String]) async -> String {
        let run = try? await CapturedCommand.run("/usr/bin/playerctl", arguments, environment: ["DBUS_SESSION_BUS_ADDRESS": bus.address], timeout: .seconds(15))
        return run?.output.trimmingCharacters(in: .whitespacesAndNewlines) ?? "(playerctl did not run)"
    }

    func players(_ bus: PrivateBus) async -> [String] {
        await playerctl(bus, ["-l"]).split(separator: "\n").map(String.init).filter { $0 != "No players found" }.sorted()
    }

    /// A song on a kitchen speaker, playing, with every button.
    static func song(_ title: String = "Blue Train", key: String = "blue-train", position: Double = 12) -> MPRISItem {
        var item = MPRISItem(identity: "Kitchen Speaker", title: title)
        item.artists = ["John Coltrane", "Lee Morgan"]
        item.album = "Blue Train"
        item.artURL = "file:///var/cache/mediaroute/art/blue-train.png"
        item.length = 643
        (item.status, item.position, item.volume) = (.playing, position, 0.5)
        (item.canGoNext, item.canGoPrevious, item.canSeek) = (true, true, true)
        item.trackKey = key
        return item
    }

    /// Commands that write down what reached them.
    static func recording(_ log: EventLog<String>) -> MPRISPlayer.Commands {
        MPRISPlayer.Commands(play: { log.append("play") }, pause: { log.append("pause") }, stop: { log.append("stop") },
                             next: { log.append("next") }, previous: { log.append("previous") },
                             seek: { log.append("seek \($0)") }, setVolume: { log.append("volume \($0)") })
    }

    @Test func aRemoteSessionShowsItsItemAndFollowsItsUpdates() async throws {
        try await withBridge { bridge, bus, client, _ in
            let name = "mediaroute.remote_kitchen"
            let shown = ContinuousClock.now
            bridge.show(remote: "kitchen", Self.song(), commands: Self.recording(EventLog()))
            try await waitUntil("the player on the bus") { await players(bus) == [name] }
            // The first question to a player just on the bus may find it still coming up under load.
            try await waitUntil("its title") { await playerctl(bus, ["-p", name, "metadata", "title"]) == "Blue Train" }
            #expect(await playerctl(bus, ["-p", name, "metadata", "artist"]) == "John Coltrane, Lee Morgan")
            #expect(await playerctl(bus, ["-p", name, "metadata", "album"]) == "Blue Train")
            #expect(await playerctl(bus, ["-p", name, "metadata", "mpris:length"]) == "643000000")
            #expect(await playerctl(bus, ["-p", name, "metadata", "mpris:artUrl"]) == "file:///var/cache/mediaroute/art/blue-train.png")
            #expect(await playerctl(bus, ["-p", name, "status"]) == "Playing")
            let identity = try await client.property("Identity", of: "org.mpris.MediaPlayer2", at: Self.path, on: "org.mpris.MediaPlayer2." + name)
            #expect(identity.string == "Kitchen Speaker")
            // Playing, the position moves on from where it was captured, by no more than the time
            // since (which a loaded machine stretches: playerctl is a process per question).
            let playing = Double(await playerctl(bus, ["-p", name, "position"])) ?? 0
            let since = (ContinuousClock.now - shown).seconds
            #expect(playing >= 12 && playing <= 12 + since, "playerctl says \(playing), \(since) s after the item was shown at 12 s")

            var paused = Self.song(position: 100)
            paused.status = .paused
            bridge.show(remote: "kitchen", paused, commands: Self.recording(EventLog()))
            try await waitUntil("paused at 100 s") {
                let (status, position) = (await playerctl(bus, ["-p", name, "status"]), await playerctl(bus, ["-p", name, "position"]))
                return status == "Paused" && Double(position) == 100
            }
            // Another track key is another track id.
            // (playerctl quotes an object path.)
            let firstTrack = await playerctl(bus, ["-p", name, "metadata", "mpris:trackid"]).trimmingCharacters(in: ["'"])
            bridge.show(remote: "kitchen", Self.song("Moment's Notice", key: "moments-notice", position: 0), commands: Self.recording(EventLog()))
            try await waitUntil("the next track shown") { await playerctl(bus, ["-p", name, "metadata", "title"]) == "Moment's Notice" }
            let secondTrack = await playerctl(bus, ["-p", name, "metadata", "mpris:trackid"]).trimmingCharacters(in: ["'"])
            #expect(firstTrack.hasPrefix("/org/mediaroute/remote/kitchen/") && secondTrack.hasPrefix("/org/mediaroute/remote/kitchen/") && firstTrack != secondTrack,
                    "\(firstTrack) then \(secondTrack)")

            bridge.remove(remote: "kitchen")
            try await waitUntil("the player gone") { await players(bus).isEmpty }
        }
    }

    @Test func playerctlsButtonsReachTheSessionsCommands() async throws {
        try await withBridge { bridge, bus, _, _ in
            let name = "mediaroute.remote_kitchen", reached = EventLog<String>()
            bridge.show(remote: "kitchen", Self.song(), commands: Self.recording(reached))
            try await waitUntil("the player on the bus") { await players(bus) == [name] }
            // playerctl waits for each call's answer, and the player answers once the command returned.
            for (arguments, expected) in [(["next"], "next"), (["previous"], "previous"), (["pause"], "pause"), (["play"], "play"),
                                          (["position", "30"], "seek 30.0"), (["volume", "0.3"], "volume 0.3")] {
                _ = await playerctl(bus, ["-p", name] + arguments)
                // Volume is a property playerctl sets without waiting for the answer.
                try await waitUntil("\(arguments) reaching the session") { reached.all.last == expected }
            }
            #expect(reached.all == ["next", "previous", "pause", "play", "seek 30.0", "volume 0.3"])
        }
    }

    @Test func aCommandNotEnabledDoesNothingAndItsFlagIsSignalledWhenItFlips() async throws {
        try await withBridge { bridge, bus, client, _ in
            let name = "mediaroute.remote_kitchen", busName = "org.mpris.MediaPlayer2." + name, reached = EventLog<String>()
            var item = Self.song()
            item.canGoNext = false
            bridge.show(remote: "kitchen", item, commands: Self.recording(reached))
            try await waitUntil("the player on the bus") { (try? await client.nameHasOwner(busName)) == true }
            let signals = try await client.signals(matching: DBusMatchRule(sender: busName, path: Self.path))
            let seen = EventLog<DBusSignal>()
            let reading = Task { for await signal in signals { seen.append(signal) } }
            defer { reading.cancel() }

            #expect(await playerctl(bus, ["-p", name, "metadata", "title"]) == "Blue Train")
            #expect(try await client.property("CanGoNext", of: Self.player, at: Self.path, on: busName).bool == false)
            _ = await playerctl(bus, ["-p", name, "next"])
            // Called anyway: no effect, as MPRIS asks, answered once the player decided.
            try await client.call(destination: busName, path: Self.path, interface: Self.player, method: "Next")
            #expect(!reached.all.contains("next"), "\(reached.all)")

            item.canGoNext = true
            bridge.show(remote: "kitchen", item, commands: Self.recording(reached))
            try await waitUntil("CanGoNext signalled") { seen.all.contains { PropertiesChangedSignal($0)?.changed["CanGoNext"]?.bool == true } }
            let change = try #require(seen.all.compactMap(PropertiesChangedSignal.init).last)
            #expect(change.interface == Self.player && change.changed.keys.sorted() == ["CanGoNext"], "\(change.changed)")
            _ = await playerctl(bus, ["-p", name, "next"])
            try await waitUntil("next reaching the session") { reached.all.contains("next") }

            // A session without a command at all says so; without a volume control, Volume reads 1
            // and cannot be set.
            item.volume = nil
            bridge.show(remote: "kitchen", item, commands: MPRISPlayer.Commands(play: { reached.append("play") }))
            try await waitUntil("CanGoNext false again") { (try? await client.property("CanGoNext", of: Self.player, at: Self.path, on: busName).bool) == false }
            #expect(try await client.property("Volume", of: Self.player, at: Self.path, on: busName).double == 1)
            let refusedCalls: [() async throws -> Void] = [
                { _ = try await client.call(destination: busName, path: Self.path, interface: Self.player, method: "Next") },
                { try await client.setProperty("Volume", of: Self.player, at: Self.path, on: busName, to: .double(0.2)) },
            ]
            for call in refusedCalls {
                let refused = await #expect(throws: DBusError.self) { try await call() }
                #expect(refused?.name == "org.mpris.MediaPlayer2.Error.NotSupported" && refused?.message.contains("Kitchen Speaker") == true, "\(String(describing: refused))")
            }
            #expect(!reached.all.contains { $0.hasPrefix("volume") })
        }
    }

    @Test func theSystemPrimarySessionHoldsTheStableNameAndPassesItOnInOneStep() async throws {
        try await withBridge { bridge, bus, client, _ in
            let stable = "org.mpris.MediaPlayer2.mediaroute"
            bridge.show(remote: "a", Self.song("Side A", key: "a"), commands: Self.recording(EventLog()))
            bridge.show(remote: "b", Self.song("Side B", key: "b"), commands: Self.recording(EventLog()))
            try await waitUntil("two players") { await players(bus) == ["mediaroute.remote_a", "mediaroute.remote_b"] }
            let owner = { @Sendable (name: String) async -> String? in
                try? await client.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                                       method: "GetNameOwner", [.string(name)]).first?.string
            }
            let (a, b) = (try #require(await owner(stable + ".remote_a")), try #require(await owner(stable + ".remote_b")))
            let changes = try await client.signals(matching: DBusMatchRule(sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus", member: "NameOwnerChanged"))
            let seen = EventLog<NameOwnerChangedSignal>()
            let reading = Task { for await signal in changes { if let change = NameOwnerChangedSignal(signal) { seen.append(change) } } }
            defer { reading.cancel() }

            bridge.setPrimary("a")
            try await waitUntil("a under the stable name") { await players(bus) == ["mediaroute", "mediaroute.remote_b"] }
            #expect(await owner(stable) == a)
            #expect(try await client.property("Metadata", of: Self.player, at: Self.path, on: stable).properties?["xesam:title"]?.string == "Side A")

            bridge.setPrimary("b")
            try await waitUntil("b under the stable name, a under its own") { await players(bus) == ["mediaroute", "mediaroute.remote_a"] }
            #expect(await owner(stable) == b)
            #expect(await owner(stable + ".remote_a") == a)
            #expect(try await client.property("Metadata", of: Self.player, at: Self.path, on: stable).properties?["xesam:title"]?.string == "Side B")
            // The stable name went from a to b in one step, never ownerless; each player held one name at a time.
            try await waitUntil("a's own name signalled back") { seen.all.contains { $0.name == stable + ".remote_a" && $0.newOwner == a } }
            let stableChanges = seen.all.filter { $0.name == stable }
            #expect(stableChanges.map { "\($0.oldOwner)>\($0.newOwner)" } == [">\(a)", "\(a)>\(b)"], "\(stableChanges)")
            let swap = seen.all.filter { $0.name.hasPrefix(stable) }.drop { !($0.name == stable + ".remote_b" && $0.newOwner.isEmpty) }.map { "\($0.name): \($0.oldOwner)>\($0.newOwner)" }
            #expect(swap == ["\(stable).remote_b: \(b)>", "\(stable): \(a)>\(b)", "\(stable).remote_a: >\(a)"], "\(swap)")

            bridge.setPrimary(nil)
            try await waitUntil("both under their own names") { await players(bus) == ["mediaroute.remote_a", "mediaroute.remote_b"] }
            // The primary remembered for a session shown later takes the stable name.
            bridge.setPrimary("c")
            bridge.show(remote: "c", Self.song("Side C", key: "c"), commands: Self.recording(EventLog()))
            try await waitUntil("c under the stable name") { await players(bus) == ["mediaroute", "mediaroute.remote_a", "mediaroute.remote_b"] }
            bridge.remove(remote: "c")
            try await waitUntil("c gone") { await players(bus) == ["mediaroute.remote_a", "mediaroute.remote_b"] }
        }
    }

    @Test func playersComeBackWhenTheBusRestarts() async throws {
        try await withBridge { bridge, bus, _, log in
            let device = try #require(MediaOutputDevice(id: "tv", displayName: "Den TV", capabilities: [.urlPlayback], deviceType: .tv, volumeControl: .absolute, canMute: true))
            var status = PlaybackStatus()
            (status.isPlaying, status.state, status.position) = (true, .playing, 10)
            let route = RouteDescription(session: "s1", protocol: "org.test.tv", protocolName: "Test", device: device, simultaneousSessions: false, busy: true,
                                         parent: nil, application: nil, url: "http://host/clip.mp4", playback: SessionPlayback(status: status, revision: 1),
                                         volume: 0.5, muted: false, streams: nil)
            bridge.take(.activated(route: route))
            bridge.show(remote: "kitchen", Self.song(), commands: Self.recording(EventLog()))
            bridge.setPrimary("kitchen")
            let all = ["mediaroute", "mediaroute.s1"]
            try await waitUntil("both players on the bus") { await players(bus) == all }

            try await bus.restartFromTask()
            try await waitUntil("the loss logged") { log.contains("MPRIS: lost the session bus") }
            // Changed while the bus was away: shown as it is now when it is back.
            bridge.show(remote: "kitchen", Self.song("Moment's Notice", key: "moments-notice"), commands: Self.recording(EventLog()))
            try await waitUntil("both players back") { await players(bus) == all }
            try await waitUntil("the latest item shown") { await playerctl(bus, ["-p", "mediaroute", "metadata", "title"]) == "Moment's Notice" }
            let routeTitle = await playerctl(bus, ["-p", "mediaroute.s1", "metadata", "title"])
            #expect(routeTitle == "clip.mp4", "\(routeTitle)")
            try await waitUntil("the return logged") { log.contains("answers again") }
            #expect(log.all.filter { $0.contains("MPRIS: lost the session bus") }.count == 1, "\(log.all)")
        }
    }
}
