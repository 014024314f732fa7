import Foundation
import NowPlaying
import Observation

/// A NowPlaying extension for the tests and the benchmark: its sessions describe a speaker from the
/// attributes (shaped as a real app's would be, and as pushes carry them), and every command is
/// written to the "device": a log file named by `$COMMAND_LOG`, one line each, and echoed in the
/// session's state as a device would report it.
@main
struct TestRemoteExtension: RemoteMediaSessionExtension {
    var configuration: RemoteMediaSessionExtensionConfiguration<Self> { RemoteMediaSessionExtensionConfiguration(extension: self) }

    func session(_ attributes: SpeakerAttributes) async throws -> SpeakerSession {
        if attributes.id == ProcessInfo.processInfo.environment["REFUSE_SESSION"] {
            throw SpeakerError(message: "the speaker refuses session \(attributes.id)")
        }
        let session = SpeakerSession(attributes: attributes)
        // As a real extension registers its session's token with its server: in `$COMMAND_LOG.tokens`.
        if let token = session.pushToken { SpeakerSession.log("token \(attributes.id) \(token.hex)", to: ".tokens") }
        return session
    }
}

extension Data {
    var hex: String { map { String(format: "%02x", $0) }.joined() }
}

struct SpeakerError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

struct SpeakerAttributes: RemoteMediaSessionAttributes {
    struct Track: Codable {
        var id: String
        var title: String
        var artist: String
        var album: String
        var duration: Double
        var artworkURL: String?
        var isExplicit: Bool?
    }

    struct Device: Codable {
        var id: String
        var name: String
        var type: String?
        var volume: Double?
    }

    var id: String
    var isPlaying: Bool?
    var elapsedTime: Double?
    var timestamp: Date?
    var currentTrack: Track?
    var devices: [Device]?
    var queueCount: Int?
    var currentTrackIndex: Int?
}

@Observable
final class SpeakerSession: RemoteMediaSessionRepresentable {
    let id: String
    var attributes: SpeakerAttributes

    init(attributes: SpeakerAttributes) {
        id = attributes.id
        self.attributes = attributes
    }

    func update(_ attributes: SpeakerAttributes) { self.attributes = attributes }

    var playbackSnapshot: MediaPlaybackSnapshot? {
        MediaPlaybackSnapshot(state: attributes.isPlaying == true ? .playing() : .paused, elapsedTime: attributes.elapsedTime ?? 0,
                              timestamp: attributes.timestamp ?? Date())
    }

    var content: (any MediaContentRepresentable)? {
        guard let track = attributes.currentTrack else { return nil }
        let artwork = track.artworkURL.flatMap(URL.init(string:)).map { url in
            Artwork(id: track.id) { _ in try ArtworkRepresentation(data: try Data(contentsOf: url)) }
        }
        var content = MusicContent(id: track.id, songTitle: track.title, artistName: track.artist, albumName: track.album, type: .audio,
                                   duration: .finite(track.duration), artwork: artwork)
        content.isExplicit = track.isExplicit
        return content
    }

    var commands: [MediaCommand] {
        let index = attributes.currentTrackIndex ?? 0, count = attributes.queueCount ?? 1
        return [
            .play { self.device("play"); self.attributes.isPlaying = true },
            .pause { self.device("pause"); self.attributes.isPlaying = false },
            .next {
                self.device("next")
                self.attributes.currentTrackIndex = index + 1
            }.enabled(index < count - 1),
            .previous {
                self.device("previous")
                self.attributes.currentTrackIndex = index - 1
            }.enabled(index > 0),
            .seekToPosition { position in
                self.device("seek \(position)")
                self.attributes.elapsedTime = position
                self.attributes.timestamp = Date()
            },
        ]
    }

    var devices: [NowPlaying.MediaDevice] {
        (attributes.devices ?? []).map { device in
            let volume: NowPlaying.MediaDevice.Capability = if let level = device.volume {
                .absoluteVolume(Float(level)) { [weak self] level in
                    await self?.setVolume(level, of: device.id)
                }
            } else {
                .relativeVolume(onIncrement: { await Self.log("volume+ \(device.id)") }, onDecrement: { await Self.log("volume- \(device.id)") })
            }
            return NowPlaying.MediaDevice(id: device.id, name: device.name, type: .init(rawValue: device.type ?? "speaker") ?? .speaker,
                                          capabilities: [volume])
        }
    }

    private func setVolume(_ level: Float, of id: String) {
        device("volume \(id) \(level)")
        guard let index = attributes.devices?.firstIndex(where: { $0.id == id }) else { return }
        attributes.devices?[index].volume = Double("\(level)")
    }

    private func device(_ line: String) { Self.log(line) }

    /// The "device": a line per command in `$COMMAND_LOG` (or the file beside it with `suffix`).
    static func log(_ line: String, to suffix: String = "") {
        guard let path = ProcessInfo.processInfo.environment["COMMAND_LOG"].map({ $0 + suffix }),
              let file = FileHandle(forWritingAtPath: path) ?? (FileManager.default.createFile(atPath: path, contents: nil) ? FileHandle(forWritingAtPath: path) : nil) else { return }
        file.seekToEndOfFile()
        file.write(Data((line + "\n").utf8))
        try? file.close()
    }
}
