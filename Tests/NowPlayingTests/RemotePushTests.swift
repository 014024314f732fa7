import AVSystemRouting
import Foundation
import MediaRouteIPC
import MediaRouteWire
@testable import MediaRouteSupervisor
import NowPlaying
import Testing
import TestSupport

/// A server starts, updates and ends remote sessions with pushes (real curl to the real endpoint),
/// with no app running: the extension is woken by the start.
@Suite("NowPlaying: pushes start, update and end sessions")
struct RemotePushTests {
    @Test func aPushStartsASessionAnotherUpdatesItAStaleOneIsIgnoredAndAnEndEndsIt() async throws {
        try await RemoteSessionTestBed.run { bed in
            #expect(await bed.extensionStatus?.pid == nil, "no extension runs before a push")
            let start = try await bed.push(RemoteSessionTestBed.aps("start", .playing("P1"), timestamp: 1_773_907_200), to: bed.startToken())
            #expect(start.status == 200, "\(start)")
            #expect(await bed.shown("P1")?.content?.title == "Song Title")
            #expect(await bed.extensionStatus?.pid != nil, "the push woke the extension")

            // The session's own token: the one the app (and the extension's pushToken) sees.
            let sessions = try await bed.controller.request(App.RemoteSessions()).sessions
            let token = try #require(sessions.first { $0.id == "P1" }?.pushToken)

            let update = try await bed.push(RemoteSessionTestBed.aps("update", .playing("P1", title: "Pushed Title", index: 1), timestamp: 1_773_907_444), to: token)
            #expect(update.status == 200, "\(update)")
            try await bed.harness.waitUntil("the pushed update shown") { await bed.shown("P1")?.content?.title == "Pushed Title" }

            // Older than the newest taken: accepted, as APNs accepts, and nothing changes.
            let stale = try await bed.push(RemoteSessionTestBed.aps("update", .playing("P1", title: "Stale Title"), timestamp: 1_773_907_300), to: token)
            #expect(stale.status == 200, "\(stale)")
            #expect(bed.harness.log.contains("ignored: its timestamp 1773907300 is older than the newest taken (1773907444)"))
            #expect(await bed.shown("P1")?.content?.title == "Pushed Title")

            let end = try await bed.push(["event": "end", "timestamp": 1_773_907_847, "attributes": ["id": "P1"]], to: token)
            #expect(end.status == 200, "\(end)")
            #expect(await bed.shown("P1") == nil)
            // The token of an ended session is no longer valid.
            let late = try await bed.push(RemoteSessionTestBed.aps("update", .playing("P1"), timestamp: 1_773_907_900), to: token)
            #expect(late.status == 410 && late.reason == "Unregistered", "\(late)")
        }
    }

    @Test func wrongPushesAreRefusedWithASentenceAndChangeNothing() async throws {
        try await RemoteSessionTestBed.run { bed in
            let startToken = try await bed.startToken()
            #expect(try await bed.push(RemoteSessionTestBed.aps("start", .playing("kept"), timestamp: 100), to: startToken).status == 200)
            let token = try #require(try await bed.controller.request(App.RemoteSessions()).sessions.first?.pushToken)

            func refused(_ answer: RemoteSessionTestBed.Answer, _ status: Int, _ reason: String, saying words: String) {
                #expect(answer.status == status && answer.reason == reason && answer.message.contains(words), "\(answer)")
            }
            // A token nobody holds.
            refused(try await bed.push(RemoteSessionTestBed.aps("start", .playing("x"), timestamp: 101), to: String(repeating: "ab", count: 32)),
                    400, "BadDeviceToken", saying: "no session or push-to-start token")
            // Start to a session's token, update to the push-to-start token.
            refused(try await bed.push(RemoteSessionTestBed.aps("start", .playing("y"), timestamp: 102), to: token), 400, "WrongTokenForEvent", saying: "push-to-start token")
            refused(try await bed.push(RemoteSessionTestBed.aps("update", .playing("kept"), timestamp: 103), to: startToken), 400, "WrongTokenForEvent",
                    saying: "session's own push token")
            // An update naming another session.
            refused(try await bed.push(RemoteSessionTestBed.aps("update", .playing("other"), timestamp: 104), to: token), 400, "IDMismatch", saying: "\"kept\"")
            // Another app's topic (with its own credential) to this app's token.
            refused(try await bed.push(RemoteSessionTestBed.aps("update", .playing("kept"), timestamp: 105), to: token, application: "org.test.other-app"),
                    400, "DeviceTokenNotForTopic", saying: "does not belong to org.test.other-app")
            // Attributes the extension cannot decode: its sentence names the member.
            let broken: JSONValue = ["event": "start", "timestamp": 106, "attributes": ["id": "broken", "isPlaying": "yes", "elapsedTime": 0]]
            refused(try await bed.push(broken, to: startToken), 400, "SessionRefused", saying: "isPlaying")
            #expect(await bed.shown("broken") == nil)
            // A second start of a session that exists.
            refused(try await bed.push(RemoteSessionTestBed.aps("start", .playing("kept"), timestamp: 107), to: startToken), 400, "SessionRefused",
                    saying: "already has a remote session \"kept\"")

            let shown = try #require(await bed.shown("kept"))
            #expect(shown.content?.title == "Song Title", "nothing changed")
            #expect(try await bed.controller.request(App.RemoteSessions()).sessions.map(\.id) == ["kept"])
        }
    }
}
