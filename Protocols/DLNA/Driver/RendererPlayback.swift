import MediaDevice
import UPnP

/// A session playing on a renderer, as the system sees it: the renderer's transport state
/// mirrored in, and the system's changes sent as AVTransport actions. A failed action is logged
/// and the next event or poll says where the renderer really is.
@MainActor
final class RendererPlayback: AVInterfaceControllable {
    private weak var renderer: ActiveRenderer?
    /// What was loaded, to load it again when played after its end (gmediarender and others
    /// forget the URI at the end of the media, and refuse Play until it is set again).
    let url: String
    let didl: String
    let title: String?
    /// Set once the renderer has played: STOPPED after that (and not by us) is the end of the media.
    private var hasPlayed = false
    private var stoppedByUs = false

    init(renderer: ActiveRenderer, url: String, metadata: String, title: String?) {
        self.renderer = renderer
        self.url = url
        didl = metadata
        self.title = title
    }

    private var transportState: String { renderer?.transportState ?? "STOPPED" }

    var isPlaying: Bool {
        get { transportState == "PLAYING" || transportState == "TRANSITIONING" }
        set {
            guard let renderer else { return }
            let ended = state == .ended
            renderer.take(transportState: newValue ? "TRANSITIONING" : "PAUSED_PLAYBACK")
            Task {
                do {
                    if newValue && ended {
                        hasPlayed = false
                        stoppedByUs = false
                        try await renderer.play(url: url, metadata: didl)
                    } else if newValue {
                        try await renderer.transport("Play", ["InstanceID": "0", "Speed": "1"])
                    } else {
                        try await renderer.transport("Pause", ["InstanceID": "0"])
                    }
                } catch {
                    log("\(renderer.name): \(newValue ? "play" : "pause") failed: \(error)")
                }
            }
        }
    }

    /// Called by the driver on each state change, before the system reads the state.
    func observe() {
        if transportState == "PLAYING" { hasPlayed = true }
    }

    /// Stops on purpose (the session is being stopped): not the end of the media.
    func stop() async {
        stoppedByUs = true
        try? await renderer?.stop()
    }

    var state: AVInterfacePlaybackState {
        switch transportState {
        case "PLAYING": .playing
        case "PAUSED_PLAYBACK", "PAUSED_RECORDING": .paused
        case "TRANSITIONING": .loading
        case "STOPPED", "NO_MEDIA_PRESENT": stoppedByUs ? .stopped : (hasPlayed ? .ended : .loading)
        default: .failed
        }
    }

    var currentPlaybackPosition: Double {
        get { state == .ended ? (renderer?.duration ?? 0) : renderer?.currentPosition ?? 0 }
        set {
            guard let renderer else { return }
            renderer.take(position: newValue)
            Task {
                do {
                    try await renderer.transport("Seek", ["InstanceID": "0", "Unit": "REL_TIME", "Target": UPnPTime.format(newValue)])
                } catch {
                    log("\(renderer.name): seek to \(UPnPTime.format(newValue)) failed: \(error)")
                }
            }
        }
    }

    /// AVTransport speeds other than 1 are optional and rare in renderers: only 1 is offered.
    var playbackSpeed: Float {
        get { 1 }
        set { if newValue != 1, let renderer { log("\(renderer.name): playback speed \(newValue) is not supported; playing at 1") } }
    }

    var timeRange: ClosedRange<Double>? { renderer?.duration.map { 0...$0 } }

    /// A renderer has one volume: the session's is the device's.
    var volume: Float {
        get { Float(renderer?.volumeLevel ?? 0) / 100 }
        set {
            guard let renderer else { return }
            Task { try? await renderer.setVolume(Int((newValue * 100).rounded())) }
        }
    }

    var isMuted: Bool {
        get { renderer?.muted ?? false }
        set {
            guard let renderer else { return }
            Task { try? await renderer.setMuted(newValue) }
        }
    }

    let audioOptions: [String] = []
    var selectedAudioOption: String? { get { nil } set {} }
    let subtitleOptions: [String] = []
    var selectedSubtitleOption: String? { get { nil } set {} }
    var metadata: AVInterfaceMetadata { AVInterfaceMetadata(title: title) }
}
