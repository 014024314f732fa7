import AVSystemRouting
import Foundation
import MediaRouteIPC
import MediaRouteWire
@testable import MediaRouteSupervisor
import NowPlaying
import Testing
import TestSupport

/// What goes wrong around remote sessions: refused updates, extensions that cannot restart, lie
/// or are removed, apps that leave.
@Suite("NowPlaying: faults")
struct RemoteSessionFaultTests {
    @Test func aRefusedUpdateChangesNothingEvenForTheExtensionsNextLife() async throws {
        try await RemoteSessionTestBed.run { bed in
            #expect(try await bed.push(RemoteSessionTestBed.aps("start", .playing("firm"), timestamp: 100), to: bed.startToken()).status == 200)
            let token = try #require(try await bed.controller.request(App.RemoteSessions()).sessions.first?.pushToken)
            let bad: JSONValue = ["event": "update", "timestamp": 200, "attributes": ["id": "firm", "isPlaying": "no"]]
            let refused = try await bed.push(bad, to: token)
            #expect(refused.status == 400 && refused.reason == "SessionRefused" && refused.message.contains("isPlaying"), "\(refused)")
            // Not kept: an older push than the refused one is still taken...
            #expect(try await bed.push(RemoteSessionTestBed.aps("update", .playing("firm", title: "Accepted"), timestamp: 150), to: token).status == 200)
            try await bed.harness.waitUntil("the accepted update") { await bed.shown("firm")?.content?.title == "Accepted" }
            // ...and after a crash the session is made again from what was accepted.
            try await bed.crashExtension(remaking: "firm")
            #expect(await bed.shown("firm")?.content?.title == "Accepted")
            let stored = try #require(try await bed.controller.request(App.RemoteSessions()).sessions.first?.attributes.objectValue)
            #expect(stored["currentTrack"]?.objectValue?["title"]?.stringValue == "Accepted")
            // A stale end is accepted and ends nothing.
            #expect(try await bed.push(["event": "end", "timestamp": 120, "attributes": ["id": "firm"]], to: token).status == 200)
            #expect(await bed.shown("firm") != nil)
        }
    }

    @Test func anExtensionThatCannotRestartEndsItsSessions() async throws {
        try await RemoteSessionTestBed.run(wrapped: true) { bed in
            _ = try await RemoteMediaSession.start(attributes: SpeakerAttributes.playing("stranded"), controller: bed.controller)
            try Data().write(to: URL(fileURLWithPath: bed.brokenFlag))
            let pid = try #require(await bed.extensionStatus?.pid)
            kill(pid, SIGKILL)
            bed.harness.mustBeGone(pid)
            try await bed.harness.waitUntil("given up") {
                if case .failed? = await bed.extensionStatus?.state { return true }
                return false
            }
            #expect(await bed.shown("stranded") == nil, "no session is left waiting for an extension that stays down")
            #expect(bed.harness.log.contains("remote session \"stranded\" of org.test.speaker-app ended: its extension org.test.nowplaying failed"))
            #expect(bed.harness.log.contains("broken on purpose"))
        }
    }

    @Test func anExtensionThatReportsTooMuchIsKilledAndItsSessionRefused() async throws {
        try await RemoteSessionTestBed.run { bed in
            let error = await #expect(throws: RemoteMediaSessionError.self) {
                _ = try await RemoteMediaSession.start(attributes: SpeakerAttributes.playing("huge", title: String(repeating: "x", count: 2000)),
                                                       controller: bed.controller)
            }
            #expect(error?.message.contains("more than 1024") == true, "\(String(describing: error))")
            #expect(await bed.shown("huge") == nil)
            try await bed.harness.waitUntil("the lying extension killed") {
                await bed.extensionStatus?.lastExit?.contains("violated the protocol") == true
            }
        }
    }

    @Test func sessionsEndWhenNoExtensionMakesThemAnyMore() async throws {
        try await RemoteSessionTestBed.run { bed in
            _ = try await RemoteMediaSession.start(attributes: SpeakerAttributes.playing("orphan"), controller: bed.controller)
            let pid = try #require(await bed.extensionStatus?.pid)
            try FileManager.default.removeItem(atPath: bed.harness.drivers + "/org.test.nowplaying.json")
            await bed.supervisor.reloadManifests()
            #expect(await bed.shown("orphan") == nil)
            #expect(kill(pid, 0) != 0, "the extension was stopped")
            #expect(bed.harness.log.contains("no extension makes the remote sessions of org.test.speaker-app any more"))
        }
    }

    @Test func sessionsOutliveTheAppThatStartedThem() async throws {
        try await RemoteSessionTestBed.run { bed in
            let app = AVSystemRouteController(configuration: .init(applicationIdentifier: RemoteSessionTestBed.application, supportedProtocols: [],
                                                                  socketPath: bed.harness.root + "/mediarouted.sock"))
            // The bed's own controller is the app's one connection: leave it, and start from another life of the app.
            await bed.controller.invalidate()
            _ = try await RemoteMediaSession.start(attributes: SpeakerAttributes.playing("lasting"), controller: app)
            await app.invalidate()
            try await bed.harness.waitUntil("the app's leaving taken") { await bed.supervisor.connectedClients == 0 }
            #expect(await bed.shown("lasting") != nil, "a push can still update it and the desktop still shows it")
        }
    }

    @Test func artworkThatIsNoPictureIsNotShown() async throws {
        try await RemoteSessionTestBed.run { bed in
            let text = bed.harness.root + "/not-a-picture.png"
            try Data("hello".utf8).write(to: URL(fileURLWithPath: text))
            var attributes = SpeakerAttributes.playing("art")
            attributes.currentTrack?.artworkURL = URL(fileURLWithPath: text).absoluteString
            _ = try await RemoteMediaSession.start(attributes: attributes, controller: bed.controller)
            try await bed.harness.waitUntil("the refusal logged") { bed.harness.log.contains("is not a PNG, JPEG, GIF or WebP") }
            let files = (try? FileManager.default.contentsOfDirectory(atPath: bed.harness.state + "/artwork")) ?? []
            #expect(files.isEmpty, "\(files)")
        }
    }
}
