import Foundation
import Glibc
import MediaRouteIPC
import Testing
import TestSupport

/// `mediaroute push` and `mediaroute push credential` against a real `mediarouted`: the push goes
/// over real HTTP through the daemon's endpoint, as a server's would.
@Suite("Pushes through mediarouted and the mediaroute CLI", .timeLimit(.minutes(2)))
struct PushThroughTheDaemonTests {
    static let app = "org.example.player"
    static let token = "0123456789abcdef0123456789abcdef"

    @Test func aPushReachesTheDaemonWithTheAppsCredentialAndARotatedOneReplacesIt() async throws {
        try await DaemonHarness.run { harness in
            try await harness.start()
            let status = await harness.cli(["status", "--json"])
            let address = try #require(status.json?.objectValue?["pushAddress"]?.stringValue, "\(status.output) \(status.error)")
            #expect(address.hasPrefix("127.0.0.1:") && !address.hasSuffix(":0") && !address.hasSuffix(":2197"))
            #expect(await harness.cli(["status"]).output.contains("pushes: accepted on \(address)"))

            let issued = await harness.cli(["push", "credential", Self.app])
            let credential = issued.output.trimmingCharacters(in: .newlines)
            #expect(credential.count == 64 && credential.allSatisfy(\.isHexDigit), "\(issued.output) \(issued.error)")
            #expect(await harness.cli(["push", "credential", Self.app]).output == issued.output, "asked again, the same credential")
            var file = stat()
            #expect(stat(harness.drivers.state + "/push-credentials.json", &file) == 0 && file.st_mode & 0o777 == 0o600)

            let payload = harness.drivers.root + "/start.json"
            try Data(#"{"aps": {"event": "start", "timestamp": 1700000000, "attributes": {"id": "s1", "title": "Blue in Green"}}}"#.utf8)
                .write(to: URL(fileURLWithPath: payload))
            // Authenticated (the CLI asks the daemon for the credential), and refused by the
            // delivery: no session or push-to-start token exists yet.
            let pushed = await harness.cli(["push", payload, "--token", Self.token, "--app", Self.app])
            #expect(pushed.status == .exited(1))
            #expect(pushed.error.contains("push refused with 400 BadDeviceToken: no session or push-to-start token is known by that token"), "\(pushed.error)")

            let rotated = await harness.cli(["push", "credential", Self.app, "--rotate"]).output.trimmingCharacters(in: .newlines)
            #expect(rotated.count == 64 && rotated != credential)
            let withOld = await harness.cli(["push", payload, "--token", Self.token, "--app", Self.app, "--credential", credential])
            #expect(withOld.status == .exited(1))
            #expect(withOld.error.contains("push refused with 403 InvalidProviderToken: the credential is not \(Self.app)'s"), "\(withOld.error)")
            let withNew = await harness.cli(["push", payload, "--token", Self.token, "--app", Self.app, "--credential", rotated, "--json"])
            #expect(withNew.status == .exited(1))
            #expect(withNew.json?.objectValue?["reason"] == "BadDeviceToken", "\(withNew.output)")
            #expect(withNew.json?.objectValue?["status"] == 400)
        }
    }

    @Test(arguments: [
        (["push", "/nonexistent/start.json", "--token", token, "--app", app], "/nonexistent/start.json does not exist"),
        (["push", "NOTJSON", "--token", token, "--app", app], "is not JSON"),
        (["push", "PAYLOAD", "--token", "xyz", "--app", app], "--token \"xyz\" is not a device token: a device token is 16 to 200 hex digits"),
        (["push", "PAYLOAD", "--token", token], "Missing expected argument '--app <app>'"),
    ])
    func badArgumentsAreRefusedBeforeAnyRequest(_ arguments: [String], _ sentence: String) async throws {
        try await DaemonHarness.run { harness in
            // No daemon runs: a request would fail otherwise.
            let notJSON = harness.drivers.root + "/notjson.txt"
            let payload = harness.drivers.root + "/start.json"
            try Data("aps: start".utf8).write(to: URL(fileURLWithPath: notJSON))
            try Data(#"{"aps": {}}"#.utf8).write(to: URL(fileURLWithPath: payload))
            let result = await harness.cli(arguments.map { $0 == "NOTJSON" ? notJSON : $0 == "PAYLOAD" ? payload : $0 })
            #expect(result.status == .exited(64), "\(result.error)")
            #expect(result.error.contains(sentence), "\(result.error)")
        }
    }
}
