/// Why a request failed, as a sentence naming the method and URL, so a log line or a route's end
/// reason says which device and which call went wrong.
public struct HTTPClientError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable {
        /// Only `http://` URLs with a host are accepted.
        case invalidURL
        /// A header that cannot be sent as given: a name that is not an HTTP token, a value with a control character other than a tab.
        case invalidHeader
        /// Refused, unreachable, reset, or closed before any response came.
        case connectionFailed
        /// No complete response within the request's timeout (connecting included).
        case timedOut
        /// What came back was not HTTP/1.x, or it ended in the middle.
        case malformedResponse
        /// The body was longer than the request's `maximumBodyLength`.
        case bodyTooLarge
    }

    public let kind: Kind
    public var description: String

    init(_ kind: Kind, _ request: String, _ reason: String) {
        self.kind = kind
        self.description = "\(request): \(reason)"
    }
}
