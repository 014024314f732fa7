import Foundation
import MediaDevice
import MediaRouteWire
import Synchronization

/// A session playing on a device: its playback control and, in `.application` mode, its data channel.
public final class AVSystemRouteMediaSession: Sendable {
    /// The session's id in mediarouted.
    public let identifier: String
    public let route: AVSystemRoute
    /// The application on the device that plays it; nil when the device's player does.
    public let application: String?
    /// The playback on the device, mirrored: set properties to command it, read or observe them for its state.
    public let playbackControl: AVSystemRoutePlaybackControl
    /// Messages with the device's application; nil in `.player` mode.
    public let dataChannel: AVSystemRouteDataChannel?

    private let endError = Mutex<AVSystemRoutingError?>(nil)

    init(identifier: String, route: AVSystemRoute, application: String?, mode: AVSystemRoute.LaunchMode, playback: SessionPlayback?, daemon: DaemonConnection) {
        self.identifier = identifier
        self.route = route
        self.application = application
        playbackControl = AVSystemRoutePlaybackControl(session: identifier, playback: playback ?? SessionPlayback(status: PlaybackStatus(), revision: 0),
                                                       daemon: daemon)
        dataChannel = mode == .application ? AVSystemRouteDataChannel(target: .session(identifier), daemon: daemon) : nil
    }

    /// True once the session stopped or its route went away.
    public var hasEnded: Bool { endError.withLock { $0 != nil } }

    /// Why it ended, once it did.
    public var endReason: AVSystemRoutingError? { endError.withLock { $0 } }

    /// Ends the session here: the last state stays readable (paused if it was playing: playback
    /// never continues on its own after its output went away), commands and messages fail with `error`.
    func end(final: PlaybackStatus?, error: AVSystemRoutingError) async {
        let first = endError.withLock { ended -> Bool in
            guard ended == nil else { return false }
            ended = error
            return true
        }
        guard first else { return }
        dataChannel?.close(error)
        await MainActor.run {
            var last = final ?? playbackControl.status
            if last.isPlaying {
                last.isPlaying = false
                last.state = .paused
            }
            playbackControl.end(last, error: error)
        }
        route.registry.remove(self)
    }
}

/// The media sessions and sample streams of one controller by id, for delivering their events.
final class MediaSessionRegistry: Sendable {
    private let sessions = Mutex<[String: AVSystemRouteMediaSession]>([:])
    private let streams = Mutex<[String: AVSystemRouteSampleStream]>([:])
    func add(_ session: AVSystemRouteMediaSession) { sessions.withLock { $0[session.identifier] = session } }
    func remove(_ session: AVSystemRouteMediaSession) { sessions.withLock { if $0[session.identifier] === session { $0[session.identifier] = nil } } }
    func session(_ id: String) -> AVSystemRouteMediaSession? { sessions.withLock { $0[id] } }
    func add(_ stream: AVSystemRouteSampleStream) { streams.withLock { $0[stream.identifier] = stream } }
    func remove(_ stream: AVSystemRouteSampleStream) { streams.withLock { if $0[stream.identifier] === stream { $0[stream.identifier] = nil } } }
    func stream(_ id: String) -> AVSystemRouteSampleStream? { streams.withLock { $0[id] } }
    /// Every stream, for ending them all when the daemon goes away.
    var allStreams: [AVSystemRouteSampleStream] { streams.withLock { Array($0.values) } }
}
