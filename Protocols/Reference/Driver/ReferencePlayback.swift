import MediaDevice
import MediaRouteIPC
import ReferenceProtocol

/// A session playing on a receiver, as the system sees it: the receiver's state mirrored in, and
/// the system's changes sent out as commands (in order, without waiting: the receiver's next
/// state says how they went).
@MainActor
final class ReferencePlayback: AVInterfaceControllable {
    private let session: String
    private weak var link: ReceiverLink?
    private(set) var receiverState: ReceiverPlaybackState
    /// When `receiverState` was true: while playing, the position moves on from there at `speed`.
    private var receivedAt = ContinuousClock.now

    init(session: String, link: ReceiverLink, state: ReceiverPlaybackState) {
        self.session = session
        self.link = link
        receiverState = state
    }

    /// The receiver's latest word on the session.
    func update(_ state: ReceiverPlaybackState) {
        receiverState = state
        receivedAt = .now
    }

    /// The position now: the receiver reports about once a second, and the system reads more often.
    private var position: Double {
        guard receiverState.phase == .playing else { return receiverState.position }
        let elapsed = ContinuousClock.now - receivedAt
        let moved = receiverState.position + elapsed.seconds * receiverState.speed
        return receiverState.duration.map { min(moved, $0) } ?? moved
    }

    /// Takes a change made here before the receiver confirms it, keeping the position continuous.
    private func change(_ body: (inout ReceiverPlaybackState) -> Void) {
        var state = receiverState
        state.position = position
        body(&state)
        update(state)
    }

    private func control(_ change: (inout ReferenceRequest.Control) -> Void) {
        var request = ReferenceRequest.Control(session: session)
        change(&request)
        link?.send(request)
    }

    var isPlaying: Bool {
        get { receiverState.isPlaying }
        set {
            change { state in
                if state.phase == .ended, newValue { state.position = 0 }
                state.phase = newValue ? .playing : .paused
            }
            control { $0.isPlaying = newValue }
        }
    }

    var state: AVInterfacePlaybackState {
        switch receiverState.phase {
        case .loading: .loading
        case .playing: .playing
        case .paused: .paused
        case .ended: .ended
        case .failed: .failed
        }
    }

    var currentPlaybackPosition: Double {
        get { position }
        set {
            change { $0.position = newValue }
            control { $0.position = newValue }
        }
    }

    var playbackSpeed: Float {
        get { Float(receiverState.speed) }
        set {
            change { $0.speed = Double(newValue) }
            control { $0.speed = Double(newValue) }
        }
    }

    var timeRange: ClosedRange<Double>? { receiverState.duration.map { 0...$0 } }

    /// The receiver has one volume: a session's volume is the device's.
    var volume: Float {
        get { Float(link?.volume ?? 0) }
        set { link?.setVolume(Double(newValue)) }
    }

    var isMuted: Bool {
        get { link?.muted ?? false }
        set { link?.setMuted(newValue) }
    }

    let audioOptions: [String] = []
    var selectedAudioOption: String? { get { nil } set {} }
    let subtitleOptions: [String] = []
    var selectedSubtitleOption: String? { get { nil } set {} }
    var metadata: AVInterfaceMetadata { AVInterfaceMetadata(title: receiverState.title) }
}
