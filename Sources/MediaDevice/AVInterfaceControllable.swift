import MediaRouteWire

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

extension PlaybackChanges {
    /// Applies the members present through the driver's setters, in a fixed order (seek before
    /// play, so "seek to 30 s and play" starts at 30 s). The ranges were checked when they decoded.
    @MainActor
    func apply(to control: any AVInterfaceControllable) {
        if let position { control.currentPlaybackPosition = position }
        if let speed { control.playbackSpeed = speed }
        if let volume { control.volume = volume }
        if let muted { control.isMuted = muted }
        if case .some(let selection) = selectedAudioOption { control.selectedAudioOption = selection }
        if case .some(let selection) = selectedSubtitleOption { control.selectedSubtitleOption = selection }
        if let isPlaying { control.isPlaying = isPlaying }
    }
}

extension PlaybackStatus {
    /// Reads the state a driver's playback control is in now.
    @MainActor
    public init(of control: any AVInterfaceControllable) {
        self.init()
        isPlaying = control.isPlaying
        state = control.state
        position = control.currentPlaybackPosition
        speed = control.playbackSpeed
        volume = control.volume
        isMuted = control.isMuted
        timeRange = control.timeRange
        audioOptions = control.audioOptions
        selectedAudioOption = control.selectedAudioOption
        subtitleOptions = control.subtitleOptions
        selectedSubtitleOption = control.selectedSubtitleOption
        metadata = control.metadata
    }
}
