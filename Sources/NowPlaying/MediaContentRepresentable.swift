import Foundation

/// Whether content is heard or seen.
public enum MediaType: Hashable, Sendable {
    case audio, video
}

/// How long content lasts.
public enum MediaDuration: Hashable, Sendable {
    case finite(TimeInterval)
    /// A broadcast happening now.
    case live
    /// Without an end, but not live (a generated stream).
    case continuous
}

/// What a session plays, described for the desktop's media controls.
public protocol MediaContentRepresentable: Identifiable {
    var id: String { get }
    var type: MediaType { get }
    var duration: MediaDuration? { get }
    var artwork: Artwork? { get }
    var genre: String? { get set }
    var isExplicit: Bool? { get set }
}
