import MediaRouteIPC

/// Where playback stands on the device.
public enum AVInterfacePlaybackState: String, Sendable, Hashable, CaseIterable {
    case stopped, loading, playing, paused, ended, failed
}

/// What is playing, for Now Playing and the picker.
public struct AVInterfaceMetadata: Sendable, Hashable {
    public var title: String?
    public var artist: String?
    public var album: String?
    public var artworkURL: String?
    public init(title: String? = nil, artist: String? = nil, album: String? = nil, artworkURL: String? = nil) {
        self.title = title
        self.artist = artist
        self.album = album
        self.artworkURL = artworkURL
    }
}

/// Play and pause. The system sets `isPlaying`; the setter sends the command to the device.
@MainActor public protocol AVInterfacePlaybackControllable: AnyObject {
    var isPlaying: Bool { get set }
    var state: AVInterfacePlaybackState { get }
}

/// Position, speed and the seekable range, in seconds (Linux has no CMTime; seconds keep it simple).
@MainActor public protocol AVInterfaceTimeControllable: AnyObject {
    /// Setting it seeks.
    var currentPlaybackPosition: Double { get set }
    var playbackSpeed: Float { get set }
    /// The playable range; nil while unknown (live streams, loading).
    var timeRange: ClosedRange<Double>? { get }
}

/// Session volume (0...1) and mute.
@MainActor public protocol AVInterfaceVolumeControllable: AnyObject {
    var volume: Float { get set }
    var isMuted: Bool { get set }
}

/// Audio and subtitle tracks by name; nil selects none.
@MainActor public protocol AVInterfaceMediaSelectionControllable: AnyObject {
    var audioOptions: [String] { get }
    var selectedAudioOption: String? { get set }
    var subtitleOptions: [String] { get }
    var selectedSubtitleOption: String? { get set }
}

@MainActor public protocol AVInterfaceMetadataControllable: AnyObject {
    var metadata: AVInterfaceMetadata { get }
}

/// The whole remote playback state of a session, implemented by the driver and mirrored by the
/// system: the system's writes reach the driver's setters, and the driver's state reaches apps.
public typealias AVInterfaceControllable = AVInterfacePlaybackControllable & AVInterfaceTimeControllable
    & AVInterfaceVolumeControllable & AVInterfaceMediaSelectionControllable & AVInterfaceMetadataControllable

// MARK: Wire form: a snapshot of every property, and writes of the settable ones.

extension AVInterfaceMetadata {
    public var json: JSONValue {
        var object = JSONObject()
        if let title { object["title"] = .string(title) }
        if let artist { object["artist"] = .string(artist) }
        if let album { object["album"] = .string(album) }
        if let artworkURL { object["artworkURL"] = .string(artworkURL) }
        return .object(object)
    }
}

@MainActor
enum PlaybackChanges {
    /// Applies the members present in `changes` through the driver's setters, in a fixed order
    /// (seek before play, so "seek to 30 s and play" starts at 30 s).
    static func apply(_ changes: JSONObject, to control: any AVInterfaceControllable) throws(RPCError) {
        func number(_ key: String, in range: ClosedRange<Double>) throws(RPCError) -> Double? {
            guard let value = changes[key] else { return nil }
            guard let n = value.doubleValue, range.contains(n) else {
                throw .invalidParams("\"\(key)\" must be a number from \(range.lowerBound) to \(range.upperBound)")
            }
            return n
        }
        if let position = try number("position", in: 0...1e9) { control.currentPlaybackPosition = position }
        if let speed = try number("speed", in: -64...64) { control.playbackSpeed = Float(speed) }
        if let volume = try number("volume", in: 0...1) { control.volume = Float(volume) }
        if let value = changes["muted"] {
            guard let muted = value.boolValue else { throw .invalidParams("\"muted\" must be true or false") }
            control.isMuted = muted
        }
        if let value = changes["selectedAudioOption"] { control.selectedAudioOption = value.stringValue }
        if let value = changes["selectedSubtitleOption"] { control.selectedSubtitleOption = value.stringValue }
        if let value = changes["isPlaying"] {
            guard let playing = value.boolValue else { throw .invalidParams("\"isPlaying\" must be true or false") }
            control.isPlaying = playing
        }
    }
}
