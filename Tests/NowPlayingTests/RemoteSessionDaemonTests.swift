import Foundation
import MediaRouteIPC
import Testing
import TestSupport

/// The operator's side, through the real `mediarouted` and `mediaroute`: a server's pushes tried
/// with `mediaroute push`, and `mediaroute nowplaying` listing what they started.
@Suite("NowPlaying: through the daemon and the CLI")
struct RemoteSessionDaemonTests {
    static let application = "org.test.speaker-app"

    @Test func mediaroutePushStartsAndUpdatesASessionThatNowplayingLists() async throws {
        try await DaemonHarness.run { harness in
            try harness.drivers.addRemoteExtension(application: Self.application)
            try await harness.start()
            let token = await harness.cli(["push", "token", Self.application])
            #expect(token.status == .exited(0), "\(token.error)")
            let startToken = token.output.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(startToken.count == 64, "\(token.output)")

            let payload = harness.drivers.root + "/start.json"
            try Data(#"{"aps": {"event": "start", "timestamp": 1773907200, "attributes": {"id": "cli-1", "isPlaying": true, "elapsedTime": 3, "timestamp": "2026-03-16T12:00:00Z", "currentTrack": {"id": "t1", "title": "From The CLI", "artist": "Tester", "album": "Album", "duration": 200}, "devices": [{"id": "den", "name": "Den Speaker", "type": "speaker", "volume": 0.5}], "queueCount": 2, "currentTrackIndex": 0}}}"#.utf8)
                .write(to: URL(fileURLWithPath: payload))
            let pushed = await harness.cli(["push", payload, "--token", startToken, "--app", Self.application])
            #expect(pushed.status == .exited(0) && pushed.output.contains("delivered"), "\(pushed.output) \(pushed.error)")

            let listed = await harness.cli(["nowplaying", "--json"])
            let sessions = try #require(listed.json?.objectValue?["sessions"]?.arrayValue, "\(listed.output) \(listed.error)")
            let session = try #require(sessions.first?.objectValue)
            #expect(session["kind"]?.stringValue == "remote" && session["id"]?.stringValue == "cli-1")
            #expect(session["title"]?.stringValue == "From The CLI" && session["status"]?.stringValue == "playing")
            #expect(session["devices"]?.arrayValue?.compactMap(\.stringValue) == ["Den Speaker"])
            let sessionToken = try #require(session["pushToken"]?.stringValue)

            // An update to the session's token, then the text listing shows it.
            try Data(#"{"aps": {"event": "update", "timestamp": 1773907300, "attributes": {"id": "cli-1", "isPlaying": false, "elapsedTime": 50, "currentTrack": {"id": "t2", "title": "Second Track", "artist": "Tester", "album": "Album", "duration": 180}, "devices": [], "queueCount": 2, "currentTrackIndex": 1}}}"#.utf8)
                .write(to: URL(fileURLWithPath: payload))
            let updated = await harness.cli(["push", payload, "--token", sessionToken, "--app", Self.application])
            #expect(updated.status == .exited(0), "\(updated.output) \(updated.error)")
            try await waitUntil("the update listed") {
                let text = await harness.cli(["nowplaying"]).output
                return text.contains("Second Track — Tester") && text.contains("paused")
            }
            // The extension is listed with the drivers, running.
            let drivers = await harness.cli(["drivers"])
            #expect(drivers.output.contains("org.test.nowplaying") && drivers.output.contains("running"), "\(drivers.output)")
        }
    }
}
