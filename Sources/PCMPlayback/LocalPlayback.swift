import MediaDevice

/// A URL session played here, as the system sees it (`AVInterfaceControllable`): the local
/// player's position, length and tags, and the device's output for pausing and volume. Hand it
/// to `started(application:playbackControl:session:)`.
@MainActor
public final class LocalPlayback: AVInterfaceControllable {
    public let player: LocalMediaPlayer
    private unowned let output: any SampleOutput
    private let onChange: @MainActor () -> Void

    /// `onChange` runs when the state changes by itself (the first audio, the end, a failure):
    /// call `playbackStateChanged(session:)` there.
    public init(player: LocalMediaPlayer, output: any SampleOutput, onChange: @escaping @MainActor () -> Void) {
        self.player = player
        self.output = output
        self.onChange = onChange
        player.onEvent = { [weak self] event in
            Task { @MainActor in self?.happened(event) }
        }
    }

    private func happened(_ event: LocalMediaPlayer.Event) {
        // At the end the sender stops reading, so a later play starts cleanly from the top.
        if event != .started { output.isPaused = true }
        onChange()
    }

    /// Stops the player (the session ended).
    public func stopPlayer() { player.stop() }

    public var isPlaying: Bool {
        get { !output.isPaused && !player.hasEnded }
        set {
            if newValue, player.hasEnded { try? player.seek(to: 0) }
            output.isPaused = !newValue
        }
    }

    public var state: AVInterfacePlaybackState {
        if player.failure != nil { return .failed }
        if player.hasEnded { return .ended }
        if output.isPaused { return .paused }
        return player.hasStarted ? .playing : .loading
    }

    public var currentPlaybackPosition: Double {
        get { player.position }
        set { try? player.seek(to: newValue) }
    }

    public var playbackSpeed: Float {
        get { Float(player.speed) }
        set { try? player.setSpeed(Double(newValue)) }
    }

    public var timeRange: ClosedRange<Double>? { player.duration.map { 0...$0 } }

    public var volume: Float {
        get { output.volume }
        set { output.volume = newValue }
    }

    public var isMuted: Bool {
        get { output.isMuted }
        set { output.isMuted = newValue }
    }

    public let audioOptions: [String] = []
    public var selectedAudioOption: String? { get { nil } set {} }
    public let subtitleOptions: [String] = []
    public var selectedSubtitleOption: String? { get { nil } set {} }
    public var metadata: AVInterfaceMetadata { AVInterfaceMetadata(title: player.title, artist: player.artist, album: player.album) }
}
