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

    init(session: String, link: ReceiverLink, state: ReceiverPlaybackState) {
        self.session = session
        self.link = link
        receiverState = state
    }

    /// The receiver's latest word on the session.
    func update(_ state: ReceiverPlaybackState) { receiverState = state }

    private func control(_ changes: JSONObject) {
        var params = changes
        params["session"] = .string(session)
        link?.send(ReferenceProtocol.Method.control, params)
    }

    var isPlaying: Bool {
        get { receiverState.isPlaying }
        set {
            if receiverState.phase == .ended, newValue { receiverState.position = 0 }
            receiverState.phase = newValue ? .playing : .paused
            control(["isPlaying": .bool(newValue)])
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
        get { receiverState.position }
        set {
            receiverState.position = newValue
            control(["position": .double(newValue)])
        }
    }

    var playbackSpeed: Float {
        get { Float(receiverState.speed) }
        set {
            receiverState.speed = Double(newValue)
            control(["speed": .double(Double(newValue))])
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
