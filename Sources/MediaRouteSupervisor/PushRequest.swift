import Foundation
import MediaRouteIPC
import MediaRouteWire
import NIOHTTP1

/// A push as the endpoint accepted it: addressed to a device token, authenticated as its app's
/// server, its `aps` payload checked. Shaped like APNs's provider API: `POST /3/device/TOKEN`,
/// `apns-topic: APP.push-type.nowplaying`, `apns-push-type: nowplaying`, `authorization: bearer
/// CREDENTIAL`, an optional `apns-id`, and the body `{"aps": {"event", "timestamp", "attributes"}}`.
public struct PushRequest: Sendable, Equatable {
    public enum Event: String, Sendable, CaseIterable {
        case start, update, end
    }

    /// The device token of the path, in lowercase hex.
    public let token: String
    /// The app of the topic (`APP.push-type.nowplaying`), whose credential the request carried.
    public let applicationIdentifier: String
    public let event: Event
    /// When the server made the push, in whole seconds since 1970 (an update older than the one
    /// shown is ignored).
    public let timestamp: Int64
    /// `aps.attributes`, as sent; `id` is always a non-empty string. An `end` may carry only `id`.
    public let attributes: JSONObject
    /// `aps.attributes.id`: the session the push is about.
    public let id: String
    /// The request's `apns-id` as sent, or one made for it; echoed in the answer.
    public let apnsID: String

    /// The largest body APNs takes, in bytes.
    public static let maximumPayload = 4096
    static let topicSuffix = ".push-type.nowplaying"
    static let pushType = "nowplaying"

    /// Checks a request in APNs's order (method, path, token, `apns-id`, topic, push type,
    /// credential, payload); the refusal names the first thing wrong.
    init(method: HTTPMethod, target: String, headers: HTTPHeaders, body: [UInt8], credentials: PushCredentials) throws(PushRefusal) {
        guard method == .POST else { throw PushRefusal(.methodNotAllowed, "a push is a POST request, not \(method.rawValue)") }
        let prefix = "/3/device/"
        guard target.hasPrefix(prefix) else { throw PushRefusal(.badPath, "the path must be /3/device/DEVICE_TOKEN, not \(target.prefix(300))") }
        let tokenText = target.dropFirst(prefix.count)
        guard let token = PushToken.normalized(tokenText) else {
            throw PushRefusal(.badDeviceToken, "\"\(tokenText.prefix(300))\" in the path is not a device token: \(PushToken.rule)")
        }
        self.token = token
        apnsID = try Self.apnsID(headers)
        applicationIdentifier = try Self.application(headers)
        let pushTypes = headers["apns-push-type"]
        guard pushTypes == [Self.pushType] else {
            throw PushRefusal(.invalidPushType, pushTypes.isEmpty ? "the request has no apns-push-type header; send apns-push-type: nowplaying"
                                                                  : "apns-push-type must be nowplaying, not \(pushTypes.joined(separator: ", ").prefix(100))")
        }
        try credentials.authorize(Self.bearer(headers), for: applicationIdentifier)
        let aps = try Self.aps(body)
        guard let eventName = aps["event"]?.stringValue, let event = Event(rawValue: eventName) else {
            throw PushRefusal(.badEvent, aps["event"].map { "aps.event must be start, update or end, not \(Self.shown($0))" }
                                         ?? "the push has no aps.event; it must be start, update or end")
        }
        self.event = event
        guard case .integer(let timestamp) = aps["timestamp"], timestamp >= 0 else {
            throw PushRefusal(.badTimestamp, aps["timestamp"].map { "aps.timestamp must be a whole number of seconds since 1970, not \(Self.shown($0))" }
                                             ?? "the push has no aps.timestamp; send the time it was made, in whole seconds since 1970")
        }
        self.timestamp = timestamp
        guard let attributesValue = aps["attributes"] else {
            throw PushRefusal(.missingID, "the push has no aps.attributes; it needs at least {\"id\": ...} naming the session")
        }
        guard let attributes = attributesValue.objectValue else {
            throw PushRefusal(.malformedPayload, "aps.attributes must be a JSON object, not \(attributesValue.kindName)")
        }
        guard let id = attributes["id"]?.stringValue, !id.isEmpty else {
            throw PushRefusal(.missingID, "aps.attributes has no id naming the session; it must be a non-empty string")
        }
        self.attributes = attributes
        self.id = id
    }

    /// Whether `text` can be an app identifier in a topic: 1 to 255 bytes, no spaces or control characters.
    static func isApplicationIdentifier(_ text: some StringProtocol) -> Bool {
        (1...255).contains(text.utf8.count) && text.unicodeScalars.allSatisfy { !$0.properties.isWhitespace && $0.value >= 0x20 && $0.value != 0x7F }
    }

    private static func apnsID(_ headers: HTTPHeaders) throws(PushRefusal) -> String {
        let given = headers["apns-id"]
        guard let first = given.first else { return UUID().uuidString }
        guard given.count == 1, UUID(uuidString: first) != nil else {
            throw PushRefusal(.badMessageID, "apns-id must be a UUID such as 123E4567-E89B-12D3-A456-4266554400A0, or left out; not \(given.joined(separator: ", ").prefix(100))")
        }
        return first
    }

    private static func application(_ headers: HTTPHeaders) throws(PushRefusal) -> String {
        let topics = headers["apns-topic"]
        guard let topic = topics.first else {
            throw PushRefusal(.missingTopic, "the request has no apns-topic header; send apns-topic: APP\(topicSuffix) with the app's identifier")
        }
        let application = topic.hasSuffix(topicSuffix) ? topic.dropLast(topicSuffix.count) : ""
        guard topics.count == 1, isApplicationIdentifier(application) else {
            throw PushRefusal(.badTopic, "the topic must be APP\(topicSuffix), with the app's identifier as APP; not \(topics.joined(separator: ", ").prefix(300))")
        }
        return String(application)
    }

    private static func bearer(_ headers: HTTPHeaders) throws(PushRefusal) -> String {
        let values = headers["authorization"]
        guard let value = values.first else {
            throw PushRefusal(.missingProviderToken, "the request has no authorization header; send authorization: bearer CREDENTIAL with the app's credential (mediaroute push credential APP prints it)")
        }
        let words = value.split(separator: " ", omittingEmptySubsequences: true)
        guard values.count == 1, words.count == 2, words[0].lowercased() == "bearer" else {
            throw PushRefusal(.invalidProviderToken, "the authorization header must be bearer CREDENTIAL, with the app's credential (mediaroute push credential APP prints it)")
        }
        return String(words[1])
    }

    private static func aps(_ body: [UInt8]) throws(PushRefusal) -> JSONObject {
        guard !body.isEmpty else { throw PushRefusal(.payloadEmpty, "the request has no body; send the JSON payload {\"aps\": {\"event\", \"timestamp\", \"attributes\"}}") }
        guard body.count <= maximumPayload else {
            throw PushRefusal(.payloadTooLarge, "the payload is over \(maximumPayload) bytes, the most a push may carry; send less in aps.attributes")
        }
        let payload: JSONValue
        do { payload = try JSONReader.parse(body) } catch {
            throw PushRefusal(.malformedPayload, "the payload is not JSON (\(error)); send {\"aps\": {\"event\", \"timestamp\", \"attributes\"}}")
        }
        guard let aps = payload.objectValue?["aps"]?.objectValue else {
            throw PushRefusal(.malformedPayload, "the payload must be a JSON object with an \"aps\" object holding event, timestamp and attributes")
        }
        return aps
    }

    /// A value as it was sent, shortened, for a sentence.
    private static func shown(_ value: JSONValue) -> String {
        let text = String(decoding: JSONWriter.encode(value), as: UTF8.self)
        return text.count > 60 ? text.prefix(60) + "…" : text
    }
}
