/// What went wrong in an AirPlay 1 session, as a value: a code a driver acts on (ask for a password
/// again, mark the receiver gone) and a sentence for the log. Nothing a receiver sends ends in a crash.
public struct RAOPError: Error, Equatable, CustomStringConvertible, Sendable {
    public enum Code: String, Sendable {
        /// The receiver's RTSP port could not be reached.
        case connectionFailed
        /// The receiver closed the connection (or it broke) before answering.
        case connectionClosed
        /// The receiver did not answer within the session's time limit.
        case timedOut
        /// The answer is not RTSP/1.0 as RAOP uses it (status line, headers, CSeq, Content-Length).
        case malformedResponse
        /// The answer's head or body is larger than any RAOP receiver sends: read no further.
        case responseTooLarge
        /// The receiver answered with a status other than 200.
        case unexpectedStatus
        /// The receiver wants a password (401) and none was given.
        case authorizationRequired
        /// The receiver refused the password given.
        case authorizationFailed
        /// RSA or AES refused the key material.
        case encryptionFailed
        /// The caller asked for something the session cannot send (a header with a line break, ...).
        case invalidArgument
        /// The call needs a recording session (after `start`, before `teardown`).
        case notRecording
    }

    public let code: Code
    public let message: String
    /// The receiver's status for `unexpectedStatus` (453: busy with another sender).
    public let status: Int?

    public init(_ code: Code, _ message: String, status: Int? = nil) {
        self.code = code
        self.message = message
        self.status = status
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
