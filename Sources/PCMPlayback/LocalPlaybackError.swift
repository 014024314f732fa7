/// A URL cannot be played here; the sentence names the URL and what is wrong with it.
public struct LocalPlaybackError: Error, Sendable, Hashable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
