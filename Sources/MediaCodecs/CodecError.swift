/// A codec could not be set up or could not code something; the sentence says which and why.
public struct CodecError: Error, Sendable, Hashable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
