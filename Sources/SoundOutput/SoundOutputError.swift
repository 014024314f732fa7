/// Why sound could not be played, said so that a person can act on it.
public struct SoundOutputError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
