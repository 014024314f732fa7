/// Why a remote-session call failed, with a sentence saying what to do.
///
/// Compare codes (`error.code == .invalidAttributes`), or match the constants:
/// `catch RemoteMediaSessionError.invalidAttributes`.
public struct RemoteMediaSessionError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: Int, Sendable, Hashable {
        /// The system could not do it: mediarouted is not running, the app has no extension, the
        /// extension failed or refused. The message says which.
        case internalFailure = 3001
        /// The attributes do not belong to this session (another `id`), or do not encode.
        case invalidAttributes = 3002
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public static let internalFailure = RemoteMediaSessionError(.internalFailure, "the system could not handle the remote session")
    public static let invalidAttributes = RemoteMediaSessionError(.invalidAttributes, "the attributes do not match the session")

    public var description: String { "\(message) (code \(code.rawValue))" }

    /// Errors are the same when their codes are: the sentence is for people.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// Lets `catch RemoteMediaSessionError.invalidAttributes` match by code.
    public static func ~= (pattern: Self, error: any Error) -> Bool { (error as? Self)?.code == pattern.code }
}
