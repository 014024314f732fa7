/// One activation of a device (and the playback that follows on it), named by the supervisor.
public struct MediaOutputSession: Sendable, Hashable, CustomStringConvertible {
    public let id: String
    public init(id: String) { self.id = id }
    public var description: String { "session \(id)" }
}
