/// What went wrong serving a receiver's remote control, as a value: a code to act on and a sentence
/// for the log. A request a receiver (or anyone else) sends never ends in a crash: it is answered
/// with an HTTP error and changes nothing.
public struct DACPError: Error, Equatable, CustomStringConvertible, Sendable {
    public enum Code: String, Sendable {
        /// A DACP-ID or Active-Remote that is not what AirPlay uses (16 upper-case hex digits; a decimal
        /// number of 32 bits).
        case invalidArgument
        /// The HTTP port could not be bound.
        case bindFailed
        /// The request's path is not `/ctrl-int/1/<command>`.
        case notFound
        /// A DACP path asked with another method than GET.
        case methodNotAllowed
        /// A command this server does not carry out (the receiver's status and property queries among them).
        case unknownCommand
        /// A command's value is not a number, or out of its range.
        case badValue
        /// The request's `Active-Remote` is missing or not this session's.
        case forbidden
        /// The request's target, headers or body are longer than any receiver sends.
        case requestTooLarge
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
