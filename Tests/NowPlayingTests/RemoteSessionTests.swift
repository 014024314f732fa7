import AVSystemRouting
import Foundation
import MediaDevice
import MediaRouteIPC
import MediaRouteWire
@testable import MediaRouteSupervisor
import NowPlaying
import Testing
import TestSupport

/// Remote media sessions end to end: an app's `RemoteMediaSession` through the real supervisor to
/// the real extension process (the test extension), and back as what the session shows.
@Suite("NowPlaying: remote sessions from an app")
struct RemoteSessionTests {
    @Test func anAppStartsUpdatesFetchesAndEndsASession() async throws {
        try await RemoteSessionTestBed.run(idleExitMilliseconds: 300) { bed in
            let session = try await RemoteMediaSession.start(attributes: SpeakerAttributes.playing("A1B2"), controller: bed.controller)
            #expect(session.id == "A1B2")
            // What the extension's representable shows reached the supervisor when it was made.
            let shown = try #require(await bed.shown("A1B2"))
            #expect(shown.content?.title == "Song Title")
            #expect(shown.content?.artist == "Name of Artist")
            #expect(shown.content?.duration == 237)
            #expect(shown.playback?.state == .playing)
            #expect(shown.commands.contains(.next) && !shown.commands.contains(.previous), "\(shown.commands)")
            #expect(shown.devices.first?.volume == 0.65 && shown.devices.first?.volumeControl == .absolute)

            // An update reaches the same instance's update(_:), and Observation sends what changed.
            try await session.update(SpeakerAttributes.playing("A1B2", title: "Second Song", index: 4))
            try await bed.harness.waitUntil("the update shown") { await bed.shown("A1B2")?.content?.title == "Second Song" }
            let last = try #require(await bed.shown("A1B2"))
            #expect(last.commands.contains(.previous) && !last.commands.contains(.next), "the last track: \(last.commands)")

            let fetched = try await RemoteMediaSession<SpeakerAttributes>.sessions(controller: bed.controller)
            #expect(fetched.map(\.id) == ["A1B2"])
            // The extension's session read its push token in `session(_:)`: the one the app lists.
            let token = try #require(try await bed.controller.request(App.RemoteSessions()).sessions.first?.pushToken)
            #expect((try? String(contentsOfFile: bed.commandLog + ".tokens", encoding: .utf8)) == "token A1B2 \(token)\n")

            let pid = try #require(await bed.extensionStatus?.pid)
            try await session.end()
            #expect(await bed.shown("A1B2") == nil)
            #expect(try await RemoteMediaSession<SpeakerAttributes>.sessions(controller: bed.controller).isEmpty)
            // With no session left, the extension exits after its idle time, by itself.
            try await bed.harness.waitUntil("the idle extension stopped") { kill(pid, 0) != 0 }
            #expect(await bed.extensionStatus?.lastExit == "exited when idle")
        }
    }

    @Test func badRequestsAreRefusedWithASentenceAndChangeNothing() async throws {
        try await RemoteSessionTestBed.run(environment: ["REFUSE_SESSION": "refused"]) { bed in
            let session = try await RemoteMediaSession.start(attributes: SpeakerAttributes.playing("kept"), controller: bed.controller)

            // An update with another id: the library refuses it before sending.
            await #expect(throws: RemoteMediaSessionError.invalidAttributes) {
                try await session.update(SpeakerAttributes.playing("other", title: "Wrong"))
            }
            // A second start with the same id.
            let twice = await #expect(throws: RemoteMediaSessionError.self) {
                _ = try await RemoteMediaSession.start(attributes: SpeakerAttributes.playing("kept"), controller: bed.controller)
            }
            #expect(twice?.message.contains("already has a remote session \"kept\"") == true, "\(String(describing: twice))")
            // The extension's own refusal, with its sentence.
            let refused = await #expect(throws: RemoteMediaSessionError.self) {
                _ = try await RemoteMediaSession.start(attributes: SpeakerAttributes.playing("refused"), controller: bed.controller)
            }
            #expect(refused?.message.contains("the speaker refuses session refused") == true, "\(String(describing: refused))")
            #expect(await bed.shown("refused") == nil)
            #expect(await bed.shown("kept")?.content?.title == "Song Title", "nothing changed")

            // An app with no extension is told what to install.
            let stranger = AVSystemRouteController(configuration: .init(applicationIdentifier: "org.test.stranger", supportedProtocols: [],
                                                                       socketPath: bed.harness.root + "/mediarouted.sock"))
            let none = await #expect(throws: RemoteMediaSessionError.self) {
                _ = try await RemoteMediaSession.start(attributes: SpeakerAttributes.playing("x"), controller: stranger)
            }
            #expect(none?.message.contains("no NowPlaying extension makes the remote sessions of org.test.stranger") == true, "\(String(describing: none))")
            await stranger.invalidate()
        }
    }

    @Test func commandsReachTheExtensionAndItsDeviceAndDisabledOnesDoNot() async throws {
        try await RemoteSessionTestBed.run { bed in
            _ = try await RemoteMediaSession.start(attributes: SpeakerAttributes.playing("cmd"), controller: bed.controller)
            let key = try #require(await bed.key("cmd"))
            try await bed.supervisor.remoteCommand(key, ToExtension.Command(session: key, command: .pause))
            try await bed.supervisor.remoteCommand(key, ToExtension.Command(session: key, command: .seekToPosition, position: 30))
            try await bed.supervisor.remoteCommand(key, ToExtension.Command(session: key, command: .setVolume, volume: 0.3))
            try await bed.supervisor.remoteCommand(key, ToExtension.Command(session: key, command: .next))
            #expect(bed.commands == ["pause", "seek 30.0", "volume living-room-speaker 0.3", "next"])
            // The device's echo is what the session shows.
            try await bed.harness.waitUntil("the echo shown") {
                let shown = await bed.shown("cmd")
                return shown?.playback?.state == .paused && shown?.devices.first?.volume == 0.3 && shown?.commands.contains(.previous) == true
            }
            // Previous is enabled now; a command the session does not take is refused by the supervisor.
            let refused = await #expect(throws: MediaDeviceError.self) {
                try await bed.supervisor.remoteCommand(key, ToExtension.Command(session: key, command: .stop))
            }
            #expect(refused?.message.contains("does not take stop") == true, "\(String(describing: refused))")
            #expect(bed.commands.count == 4)
        }
    }

    @Test func aCrashedExtensionIsRestartedAndItsSessionsComeBackWithTheirLastAttributes() async throws {
        try await RemoteSessionTestBed.run { bed in
            let session = try await RemoteMediaSession.start(attributes: SpeakerAttributes.playing("survivor"), controller: bed.controller)
            try await session.update(SpeakerAttributes.playing("survivor", title: "After Update", index: 2))
            try await bed.harness.waitUntil("the update shown") { await bed.shown("survivor")?.content?.title == "After Update" }
            // Made again in the new process from the last attributes, and commands reach it there.
            try await bed.crashExtension(remaking: "survivor")
            #expect(await bed.shown("survivor")?.content?.title == "After Update")
            let key = try #require(await bed.key("survivor"))
            try await bed.supervisor.remoteCommand(key, ToExtension.Command(session: key, command: .previous))
            #expect(bed.commands.last == "previous")
            #expect(bed.harness.log.contains("made again by its restarted extension"))
        }
    }

    @Test func anExtensionThatKeepsCrashingIsGivenUpAndItsSessionsEnd() async throws {
        try await RemoteSessionTestBed.run { bed in
            _ = try await RemoteMediaSession.start(attributes: SpeakerAttributes.playing("doomed"), controller: bed.controller)
            // The budget: 5 restarts within 60 s; the sixth crash spends it.
            for crash in 1...6 {
                let pid = try #require(await bed.extensionStatus?.pid, "crash \(crash)")
                try await bed.harness.waitUntil("session made in pid \(pid)") { await bed.isMade("doomed") }
                kill(pid, SIGKILL)
                bed.harness.mustBeGone(pid)
                try await bed.harness.waitUntil("after crash \(crash)") {
                    guard let status = await bed.extensionStatus else { return false }
                    if case .failed = status.state { return true }
                    return status.pid != nil && status.pid != pid
                }
            }
            guard case .failed(let why)? = await bed.extensionStatus?.state else { Issue.record("the extension is not failed"); return }
            #expect(why.contains("6 crashes within 60 s"), "\(why)")
            #expect(await bed.shown("doomed") == nil)
            #expect(try await RemoteMediaSession<SpeakerAttributes>.sessions(controller: bed.controller).isEmpty)
            #expect(bed.harness.log.contains("remote session \"doomed\" of org.test.speaker-app ended: its extension org.test.nowplaying"))
        }
    }

    @Test func theAppHasAPushToStartToken() async throws {
        try await RemoteSessionTestBed.run { bed in
            var updates = await RemoteMediaSession<SpeakerAttributes>.pushToStartTokenUpdates(controller: bed.controller).makeAsyncIterator()
            let token = try #require(await updates.next())
            #expect(token.count == 32)
            let hex = token.map { String(format: "%02x", $0) }.joined()
            #expect(try await bed.controller.request(App.PushToStartToken()).token == hex, "the same each time")
            #expect(await RemoteMediaSession<SpeakerAttributes>.pushToStartToken(controller: bed.controller) == token)
            // The operator rotates the app's credential: the token is replaced, and the app hears it.
            _ = try await bed.supervisor.pushCredential(for: RemoteSessionTestBed.application, rotate: true)
            let rotated = try #require(await updates.next())
            #expect(rotated != token && rotated.count == 32)
            #expect(await RemoteMediaSession<SpeakerAttributes>.pushToStartToken(controller: bed.controller) == rotated)
        }
    }
}

/// The module `MediaDevice` and the type `NowPlaying.MediaDevice` in one file: an app importing
/// both names the NowPlaying type with its module, and the SDK's types need nothing.
@Test func anAppImportingBothMediaDevicesCompiles() {
    let device = NowPlaying.MediaDevice(id: "tv", name: "Den TV", type: .tvAndSpeaker, capabilities: [.relativeVolume(onIncrement: {}, onDecrement: {})])
    let output = MediaOutputDevice.self
    #expect(device.name == "Den TV")
    #expect("\(output)" == "MediaOutputDevice")
}
