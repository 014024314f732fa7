import Foundation

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
