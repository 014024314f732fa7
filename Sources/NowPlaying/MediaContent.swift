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

/// A song: title, artist and album are what MPRIS shows as `xesam:title`, `xesam:artist` and `xesam:album`.
public struct MusicContent: MediaContentRepresentable {
    public let id: String
    public let songTitle: String
    public let artistName: String
    public let albumName: String
    public let type: MediaType
    public let duration: MediaDuration?
    public let artwork: Artwork?
    public var composer: String?
    public var genre: String?
    public var isExplicit: Bool?

    public init(id: String, songTitle: String, artistName: String, albumName: String, type: MediaType, duration: MediaDuration?, artwork: Artwork?) {
        self.id = id
        self.songTitle = songTitle
        self.artistName = artistName
        self.albumName = albumName
        self.type = type
        self.duration = duration
        self.artwork = artwork
    }
}
