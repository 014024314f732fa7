import Foundation
import MediaRouteIPC
import MediaRouteSupervisor
import PrivateDaemons
import Testing
import TestSupport

/// The push endpoint in-process, with a delivery that records, hit with the real `curl` as an
/// app's server would (and with raw sockets where curl cannot misbehave enough).
@Suite("The push endpoint, as servers reach it", .timeLimit(.minutes(2)))
struct PushEndpointTests {
    @Test func validPushesAreDeliveredWithTheirFieldsParsed() async throws {
        try await PushTestBed.run { bed in
            let apnsID = "123E4567-E89B-12D3-A456-426655440000"
            // Header names in any case, as HTTP allows.
            var headers: [String: String?] = bed.serverHeaders
            headers["APNS-Topic"] = headers.removeValue(forKey: "apns-topic")!
            headers["apns-id"] = apnsID
            let started = try await bed.post(PushTestBed.payload(), headers: headers)
            #expect(started.status == 200, "\(started)")
            #expect(started.headers["apns-id"] == apnsID)
            #expect(started.body.isEmpty)

            // An update and an end over one kept-alive connection, without apns-id: one is made.
            var arguments: [String] = []
            for (index, body) in [PushTestBed.payload(event: "update", timestamp: "1700000005", attributes: #"{"id": "s1", "title": "So What", "isPlaying": true}"#),
                                  PushTestBed.payload(event: "end", timestamp: "1700000009", attributes: #"{"id": "s1"}"#)].enumerated() {
                if index > 0 { arguments.append("--next") }
                arguments += ["-o", "/dev/null", "-w", "%{http_code} %{num_connects}\\n", "--http1.1", "-X", "POST", "--data-binary", body]
                for (name, value) in bed.serverHeaders { arguments += ["-H", "\(name): \(value)"] }
                arguments.append(bed.url)
            }
            let run = try await CapturedCommand.run("/usr/bin/curl", ["-sS", "--max-time", "10"] + arguments, timeout: .seconds(20))
            #expect(run.output == "200 1\n200 0\n", "one connection for both: \(run.output)")

            let pushes = bed.pushes
            try #require(pushes.count == 3, "\(pushes)")
            #expect(pushes.map(\.event) == [.start, .update, .end])
            #expect(pushes.map(\.timestamp) == [1_700_000_000, 1_700_000_005, 1_700_000_009])
            #expect(pushes.allSatisfy { $0.token == PushTestBed.token.lowercased() && $0.applicationIdentifier == PushTestBed.app && $0.id == "s1" })
            #expect(pushes[0].apnsID == apnsID)
            #expect(UUID(uuidString: pushes[1].apnsID) != nil && pushes[1].apnsID != pushes[2].apnsID)
            #expect(pushes[0].attributes == ["id": "s1", "title": "Blue in Green"])
            #expect(pushes[1].attributes["isPlaying"] == true)
            #expect(pushes[2].attributes == ["id": "s1"])
        }
    }

    /// A request that is wrong in one way, and what the endpoint must answer.
    struct Refused: Sendable, CustomTestStringConvertible {
        let name: String
        var method = "POST"
        var path: String?
        var headers: [String: String?] = [:]
        /// Sends the other app's credential instead of this app's.
        var otherAppsCredential = false
        var body = PushTestBed.payload()
        let status: Int
        let reason: String
        let sentence: String
        var testDescription: String { name }
    }

    static let refusals: [Refused] = [
        Refused(name: "no credential", headers: ["authorization": nil], status: 403, reason: "MissingProviderToken", sentence: "the request has no authorization header"),
        Refused(name: "a wrong credential", headers: ["authorization": "bearer " + String(repeating: "0", count: 64)], status: 403,
                reason: "InvalidProviderToken", sentence: "the credential is not org.example.player's"),
        Refused(name: "not a bearer credential", headers: ["authorization": "basic dXNlcjpwYXNz"], status: 403, reason: "InvalidProviderToken",
                sentence: "the authorization header must be bearer CREDENTIAL"),
        Refused(name: "another app's credential", otherAppsCredential: true, status: 403, reason: "InvalidProviderToken", sentence: "the credential is not org.example.player's"),
        Refused(name: "an app without a credential", headers: ["apns-topic": "org.example.stranger.push-type.nowplaying"], status: 400,
                reason: "TopicDisallowed", sentence: "org.example.stranger has no push credential"),
        Refused(name: "a wrong topic", headers: ["apns-topic": "org.example.player"], status: 400, reason: "BadTopic",
                sentence: "the topic must be APP.push-type.nowplaying"),
        Refused(name: "no topic", headers: ["apns-topic": nil], status: 400, reason: "MissingTopic", sentence: "no apns-topic header"),
        Refused(name: "a wrong push type", headers: ["apns-push-type": "alert"], status: 400, reason: "InvalidPushType", sentence: "apns-push-type must be nowplaying, not alert"),
        Refused(name: "no push type", headers: ["apns-push-type": nil], status: 400, reason: "InvalidPushType", sentence: "no apns-push-type header"),
        Refused(name: "a bad token", path: "/3/device/xyz", status: 400, reason: "BadDeviceToken", sentence: "\"xyz\" in the path is not a device token"),
        Refused(name: "an odd token", path: "/3/device/0123456789abcdef0", status: 400, reason: "BadDeviceToken", sentence: "an even number of them"),
        Refused(name: "a path of no push", path: "/2/device/0123456789abcdef", status: 404, reason: "BadPath", sentence: "the path must be /3/device/DEVICE_TOKEN"),
        Refused(name: "GET", method: "GET", body: "", status: 405, reason: "MethodNotAllowed", sentence: "a push is a POST request, not GET"),
        Refused(name: "a bad apns-id", headers: ["apns-id": "push-1"], status: 400, reason: "BadMessageId", sentence: "apns-id must be a UUID"),
        Refused(name: "no id", body: PushTestBed.payload(attributes: #"{"title": "x"}"#), status: 400, reason: "MissingID",
                sentence: "aps.attributes has no id naming the session"),
        Refused(name: "an empty id", body: PushTestBed.payload(event: "end", attributes: #"{"id": ""}"#), status: 400, reason: "MissingID",
                sentence: "aps.attributes has no id"),
        Refused(name: "no attributes", body: #"{"aps": {"event": "end", "timestamp": 1}}"#, status: 400, reason: "MissingID", sentence: "the push has no aps.attributes"),
        Refused(name: "a fractional timestamp", body: PushTestBed.payload(timestamp: "1700000000.5"), status: 400, reason: "BadTimestamp",
                sentence: "aps.timestamp must be a whole number of seconds since 1970, not 1700000000.5"),
        Refused(name: "a timestamp as a string", body: PushTestBed.payload(timestamp: #""1700000000""#), status: 400, reason: "BadTimestamp",
                sentence: "aps.timestamp must be a whole number"),
        Refused(name: "an unknown event", body: PushTestBed.payload(event: "pause"), status: 400, reason: "BadEvent",
                sentence: "aps.event must be start, update or end, not \"pause\""),
        Refused(name: "a body over 4096 bytes", body: PushTestBed.payload(attributes: #"{"id": "s1", "notes": "\#(String(repeating: "a", count: 4100))"}"#),
                status: 413, reason: "PayloadTooLarge", sentence: "the payload is over 4096 bytes"),
        Refused(name: "a chunked body over 4096 bytes", headers: ["transfer-encoding": "chunked"],
                body: PushTestBed.payload(attributes: #"{"id": "s1", "notes": "\#(String(repeating: "a", count: 4100))"}"#),
                status: 413, reason: "PayloadTooLarge", sentence: "the payload is over 4096 bytes"),
        Refused(name: "malformed JSON", body: #"{"aps": {"event": "start",}"#, status: 400, reason: "MalformedPayload", sentence: "the payload is not JSON"),
        Refused(name: "no aps", body: #"{"event": "start"}"#, status: 400, reason: "MalformedPayload", sentence: "with an \"aps\" object"),
        Refused(name: "an empty body", body: "", status: 400, reason: "PayloadEmpty", sentence: "the request has no body"),
    ]

    @Test(arguments: refusals)
    func aBadPushIsRefusedWithASentenceAndDeliversNothing(_ refused: Refused) async throws {
        try await PushTestBed.run { bed in
            var headers: [String: String?] = bed.serverHeaders
            if refused.otherAppsCredential { headers["authorization"] = "bearer \(bed.otherCredential)" }
            for (name, value) in refused.headers { headers[name] = value }
            let answer = try await bed.post(refused.body, headers: headers, path: refused.path, method: refused.method)
            #expect(answer.status == refused.status, "\(answer)")
            #expect(answer.reason == refused.reason, "\(answer)")
            #expect(answer.message.contains(refused.sentence), "\(answer)")
            #expect(answer.headers["content-type"] == "application/json")
            #expect(bed.pushes.isEmpty)
        }
    }

    /// The body is refused once 4096 bytes have arrived, before the request ends: the client is
    /// answered while it still sends, and nothing more is kept.
    @Test func anOversizedBodyIsRefusedWhileItArrives() async throws {
        try await PushTestBed.run { bed in
            let head = "POST /3/device/\(PushTestBed.token) HTTP/1.1\r\nhost: x\r\napns-topic: \(PushTestBed.app).push-type.nowplaying\r\n"
                + "apns-push-type: nowplaying\r\nauthorization: bearer \(bed.credential)\r\ntransfer-encoding: chunked\r\n\r\n"
            // One chunk announced as 1 MiB, of which 5000 bytes are sent; the request never ends.
            let answer = try await bed.raw(Array((head + "100000\r\n" + String(repeating: "a", count: 5000)).utf8))
            #expect(answer.hasPrefix("HTTP/1.1 413 Payload Too Large"), "\(answer)")
            #expect(answer.contains(#""reason":"PayloadTooLarge""#))
            #expect(bed.pushes.isEmpty)
        }
    }

    /// A client that sends part of a request and stops is answered 408 at the deadline and closed.
    @Test func aSlowClientIsAnsweredAtTheDeadline() async throws {
        try await PushTestBed.run(limits: PushEndpoint.Limits(requestDeadline: .seconds(2))) { bed in
            // 2 s: a loaded machine may take a while between the connect and the first bytes, and a
            // connection that sent nothing by its deadline is closed without an answer.
            let head = "POST /3/device/\(PushTestBed.token) HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\n\r\n{\"aps\":"
            let started = ContinuousClock.now
            let answer = try await bed.raw(Array(head.utf8))
            #expect(answer.hasPrefix("HTTP/1.1 408"), "\(answer)")
            #expect(answer.contains("the request did not arrive whole within"))
            #expect(ContinuousClock.now - started < .seconds(8), "closed by the endpoint, not by the reader giving up (at 10 s)")
            #expect(bed.pushes.isEmpty)
        }
    }

    /// Beyond the cap, a connection is answered 503 with a sentence and closed.
    @Test func connectionsOverTheLimitAreRefused() async throws {
        try await PushTestBed.run(limits: PushEndpoint.Limits(connections: 2)) { bed in
            try await bed.holdingConnection {
                try await bed.holdingConnection {
                    let answer = try await bed.raw([])
                    #expect(answer.hasPrefix("HTTP/1.1 503"), "\(answer)")
                    #expect(answer.contains("already serves 2 connections, its limit"))
                }
            }
            // Once they close, connections are served again.
            try await waitUntil("the held connections are closed") {
                (try? await bed.post(PushTestBed.payload(), headers: bed.serverHeaders).status) == 200
            }
        }
    }
}
