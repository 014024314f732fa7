import MediaDevice

/// A URL played here for a sample-only device, as the system sees it: the same playback control
/// a URL-playing device has, over a `LocalMediaPlayer` (position, speed, seeking, the end) and the
/// driver's output (pausing, volume).
@MainActor
public final class LocalPlayback: AVInterfaceControllable {
    public let player: LocalMediaPlayer
    private let output: any SampleOutput
    private let onChange: @MainActor () -> Void
    private var phase: AVInterfacePlaybackState
    /// Whether samples from the current position on were read: resuming then plays at once.
    private var heardAudio = false
    /// Why playback failed, while `state` is `.failed`.
    public private(set) var failure: String?
    /// The last change refused (a speed out of range): setters cannot throw, so it is kept here.
    public private(set) var refusal: LocalPlaybackError?

    /// `onChange` is called when the state changes on its own (audio started, ended, failed), for
    /// the driver to publish it. Playing unless `output` is paused. Takes over `player.onEvent`.
    public init(player: LocalMediaPlayer, output: any SampleOutput, onChange: @escaping @MainActor () -> Void) {
        self.player = player
        self.output = output
        self.onChange = onChange
        phase = output.isPaused ? .paused : .loading
        player.onEvent = { [weak self] event in
            Task { @MainActor in self?.handle(event) }
        }
    }

    private func handle(_ event: LocalMediaPlayer.Event) {
        switch event {
        case .started:
            heardAudio = true
            guard phase == .loading else { return }
            phase = .playing
        case .ended:
            guard phase != .ended else { return }
            phase = .ended
            output.isPaused = true
        case .failed(let reason):
            phase = .failed
            failure = reason
            output.isPaused = true
        }
        onChange()
    }

    public var isPlaying: Bool {
        get { phase == .loading || phase == .playing }
        set {
            guard newValue != isPlaying else { return }
            if newValue {
                if phase == .ended || phase == .failed {
                    failure = nil
                    heardAudio = false
                    player.seek(to: 0)
                }
                phase = heardAudio ? .playing : .loading
                output.isPaused = false
            } else {
                phase = .paused
                output.isPaused = true
            }
        }
    }

    public var state: AVInterfacePlaybackState { phase }

    public var currentPlaybackPosition: Double {
        get { player.position }
        set {
            player.seek(to: newValue)
            output.sourceJumped(to: newValue)
            heardAudio = false
            if let duration = player.duration, newValue >= duration {
                phase = .ended
                output.isPaused = true
            } else if phase == .ended || phase == .failed {
                failure = nil
                phase = .paused
            } else if phase == .playing {
                phase = .loading  // until the samples from there are read
            }
        }
    }

    public var playbackSpeed: Float {
        get { Float(player.speed) }
        set {
            do throws(LocalPlaybackError) {
                try player.setSpeed(Double(newValue))
                refusal = nil
            } catch {
                refusal = error
            }
        }
    }

    public var timeRange: ClosedRange<Double>? { player.duration.map { 0...$0 } }

    /// The device has one volume: the session's is the output's.
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
    public var metadata: AVInterfaceMetadata { player.metadata }
}
