import Foundation
import NowPlaying
import Observation

// The extension of the article "Publishing remote media sessions" (Sources/NowPlaying/NowPlaying.docc).
// The article's copy of SpeakerExtension has `@main`, which a test target cannot carry.

struct SpeakerAttributes: RemoteMediaSessionAttributes {
    var id: String
    var title: String
    var artist: String
    var album: String
    var duration: Double
    var isPlaying: Bool
    var elapsed: Double
    var updatedAt: Date
}

struct SpeakerExtension: RemoteMediaSessionExtension {
    var configuration: RemoteMediaSessionExtensionConfiguration<Self> { RemoteMediaSessionExtensionConfiguration(extension: self) }

    func session(_ attributes: SpeakerAttributes) async throws -> SpeakerSession {
        let session = SpeakerSession(attributes)
        if let token = session.pushToken { try await SpeakerLink.register(pushToken: token, for: attributes.id) }
        return session
    }
}

@Observable
final class SpeakerSession: RemoteMediaSessionRepresentable {
    let id: String
    private var attributes: SpeakerAttributes

    init(_ attributes: SpeakerAttributes) {
        id = attributes.id
        self.attributes = attributes
    }

    func update(_ attributes: SpeakerAttributes) { self.attributes = attributes }

    var content: (any MediaContentRepresentable)? {
        let cover = Artwork(id: "cover-\(attributes.album)") { size in
            try ArtworkRepresentation(data: try await SpeakerLink.cover(width: Int(size.width)))
        }
        return MusicContent(id: "\(id)-\(attributes.title)", songTitle: attributes.title, artistName: attributes.artist,
                            albumName: attributes.album, type: .audio, duration: .finite(attributes.duration), artwork: cover)
    }

    var playbackSnapshot: MediaPlaybackSnapshot? {
        MediaPlaybackSnapshot(state: attributes.isPlaying ? .playing() : .paused, elapsedTime: attributes.elapsed, timestamp: attributes.updatedAt)
    }

    var commands: [MediaCommand] {
        [.play { try await SpeakerLink.send("play") },
         .pause { try await SpeakerLink.send("pause") },
         .seekToPosition { seconds in try await SpeakerLink.send("seek \(seconds)") },
         .next { try await SpeakerLink.send("next") }.enabled(false)]
    }

    var devices: [MediaDevice] {
        [MediaDevice(id: "kitchen", name: "Kitchen Speaker", type: .speaker,
                     capabilities: [.absoluteVolume(0.4) { level in try await SpeakerLink.send("volume \(level)") }])]
    }
}

/// Stands in for the speaker's own API, which the extension reaches over the network.
enum SpeakerLink {
    static func send(_ command: String) async throws {}
    static func cover(width: Int) async throws -> Data { Data([0x89, 0x50, 0x4E, 0x47]) }
    static func register(pushToken: Data, for session: String) async throws {}
}
