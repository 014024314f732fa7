/// Why a push was refused: the HTTP status, APNs's `reason` (or one of ours, named in its style),
/// and a sentence saying what was wrong and what to do. The endpoint answers it as
/// `{"reason": ..., "message": ...}` with the status; nothing changes.
public struct PushRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Reason: String, Sendable, CaseIterable {
        // APNs's reasons.
        case badDeviceToken = "BadDeviceToken"
        case badTopic = "BadTopic"
        case missingTopic = "MissingTopic"
        case topicDisallowed = "TopicDisallowed"
        case deviceTokenNotForTopic = "DeviceTokenNotForTopic"
        case invalidPushType = "InvalidPushType"
        case badMessageID = "BadMessageId"
        case payloadEmpty = "PayloadEmpty"
        case missingProviderToken = "MissingProviderToken"
        case invalidProviderToken = "InvalidProviderToken"
        case badPath = "BadPath"
        case methodNotAllowed = "MethodNotAllowed"
        case unregistered = "Unregistered"
        case payloadTooLarge = "PayloadTooLarge"
        case internalServerError = "InternalServerError"
        case serviceUnavailable = "ServiceUnavailable"
        // Ours: what a NowPlaying push carries, and a client too slow to send its request.
        case badEvent = "BadEvent"
        case missingID = "MissingID"
        case idMismatch = "IDMismatch"
        case badTimestamp = "BadTimestamp"
        case malformedPayload = "MalformedPayload"
        case requestTimeout = "RequestTimeout"
        /// The app's extension could not take the push (the attributes do not decode, it refused).
        case sessionRefused = "SessionRefused"
        /// A start to a session's token, or an update or end to a push-to-start token.
        case wrongTokenForEvent = "WrongTokenForEvent"

        /// The HTTP status APNs answers with it (ours: the closest one).
        public var status: Int {
            switch self {
            case .missingProviderToken, .invalidProviderToken: 403
            case .badPath: 404
            case .methodNotAllowed: 405
            case .requestTimeout: 408
            case .unregistered: 410
            case .payloadTooLarge: 413
            case .internalServerError: 500
            case .serviceUnavailable: 503
            default: 400
            }
        }
    }

    public let reason: Reason
    /// One sentence a person can act on.
    public let message: String
    public var status: Int { reason.status }

    public init(_ reason: Reason, _ message: String) {
        self.reason = reason
        self.message = message
    }

    public var description: String { "\(status) \(reason.rawValue): \(message)" }

    // The delivery side's refusals, with their sentences.

    /// No session or push-to-start token is known by the push's token.
    public static let unknownToken = PushRefusal(.badDeviceToken, "no session or push-to-start token is known by that token")

    /// The token was valid once: its session ended, or the app gave a newer push-to-start token.
    public static func unregistered(_ token: String) -> PushRefusal {
        PushRefusal(.unregistered, "the token \(token) is no longer valid: its session ended or the app replaced it; stop pushing to it")
    }

    /// The token is known, but as another app's.
    public static func deviceTokenNotForTopic(_ token: String, application: String) -> PushRefusal {
        PushRefusal(.deviceTokenNotForTopic, "the token \(token) does not belong to \(application); push to it with its own app's topic and credential")
    }

    /// An update or end names another session than the one the token stands for.
    public static func idMismatch(_ id: String, expected: String) -> PushRefusal {
        PushRefusal(.idMismatch, "aps.attributes.id is \"\(id)\", but this token is the session \"\(expected)\"'s; an update or end keeps the session's id")
    }
}
