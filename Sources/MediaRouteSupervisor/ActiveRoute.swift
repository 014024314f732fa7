import Foundation
import MediaDevice
import MediaRouteIPC
import MediaRouteWire
import Synchronization

/// An activated device: the route apps and the CLI play to, until it is deactivated or its driver dies.
/// Not Sendable: it lives in the supervisor's `RouteTable`, on the supervisor's executor.
final class ActiveRoute {
    let session: MediaOutputSession
    let record: DriverRecord
    /// Replaced when the driver reports new properties for the device.
    var device: MediaOutputDevice
    /// The connection that activated it (an app), if it is still there; nil for the operator's routes.
    let owner: ClientID?
    /// Whether the driver runs several sessions at once: a second media session on this device then
    /// gets an activation of its own (a child route) instead of being refused.
    let simultaneousSessions: Bool
    /// For a child route: the route it was opened beside, and ends with.
    let parent: String?

    // The media session playing on this route, if any.
    /// The application on the device that handles the session (`started(application:...)`); nil = its player.
    var application: String?
    var url: String?
    /// The driver's latest playback state while a session plays, stamped with its `revision`.
    private(set) var playback: SessionPlayback?
    /// How many states were stored: an app's notification task can deliver a report after the answer
    /// to its own command, and drops any state older than one it has shown.
    private var playbackRevision: Int64 = 0
    /// The app that started the session, which alone sees its state and its data.
    var mediaOwner: ClientID?
    /// The session start in progress (`Supervisor.play`): the route is taken until it ends.
    var sessionStart: SessionStart?
    var isStartingSession: Bool { sessionStart != nil }

    var volume: Float?
    var muted: Bool?
    /// Real-time sample streams open on the route, by id, with the connection that opened each.
    var streams: [String: (format: SampleFormat, owner: ClientID)] = [:]

    /// Set while the device is away and the route waits for it to come back (`Supervisor+Reconnect`).
    var reconnect: ReconnectWait?
    /// The media session is kept here, paused at its position, and is not on the device (its
    /// device went away, or the daemon restarted): it is started there again, at its position,
    /// when someone resumes it. Nothing starts playing by itself.
    private(set) var isSessionParked = false

    init(session: MediaOutputSession, record: DriverRecord, device: MediaOutputDevice, owner: ClientID?,
         simultaneousSessions: Bool, parent: String? = nil) {
        self.session = session
        self.record = record
        self.device = device
        self.owner = owner
        self.simultaneousSessions = simultaneousSessions
        self.parent = parent
    }

    var hasSession: Bool { playback != nil || isStartingSession }

    /// Throws why the route takes no command for its device now: the device is away.
    func requireDevice() throws(MediaDeviceError) {
        guard let wait = reconnect else { return }
        throw MediaDeviceError(.connectionFailed, "\(device.displayName) is away (\(wait.why)); the system waits for it to come back until \(wait.untilText)")
    }

    /// Stores the driver's newest playback state; returns it as stored, stamped.
    @discardableResult
    func store(playback state: PlaybackStatus) -> SessionPlayback {
        playbackRevision += 1
        let stamped = SessionPlayback(status: state, revision: playbackRevision)
        playback = stamped
        return stamped
    }

    /// The session failed: the state its app is told it ended in.
    func markPlaybackFailed() {
        playback?.status.state = .failed
        playback?.status.isPlaying = false
    }

    var isPlaying: Bool { playback?.status.isPlaying == true }

    var description: RouteDescription {
        RouteDescription(session: session.id, protocol: record.id, protocolName: record.manifest.displayName, device: device,
                         simultaneousSessions: simultaneousSessions, busy: hasSession, parent: parent, application: application, url: url,
                         playback: playback, volume: volume, muted: muted,
                         streams: streams.isEmpty ? nil : streams.sorted { $0.key < $1.key }.map { .init(stream: $0.key, format: $0.value.format) },
                         reconnectingUntil: reconnect?.until.timeIntervalSince1970)
    }

    /// Keeps the media session here, paused where it was; returns its state if it has one.
    @discardableResult
    func parkSession() -> SessionPlayback? {
        guard var state = playback?.status else { return nil }
        state.isPlaying = false
        if state.state == .playing || state.state == .loading { state.state = .paused }
        isSessionParked = true
        return store(playback: state)
    }

    /// A session brought back by a restarted daemon, parked at its saved state.
    func parkSession(url: String, application: String?, state: PlaybackStatus) {
        self.url = url
        self.application = application
        store(playback: state)
        parkSession()
    }

    /// Forgets the media session; returns its last state, paused if it was playing (the privacy rule:
    /// playback that loses its output stops, it never continues somewhere else).
    @discardableResult
    func endSession() -> SessionPlayback? {
        guard var state = playback else { return nil }
        if state.status.isPlaying {
            state.status.isPlaying = false
            state.status.state = .paused
        }
        playback = nil
        url = nil
        application = nil
        mediaOwner = nil
        isSessionParked = false
        return state
    }
}

/// A session start under way on a route: what it plays and for whom, and whether the driver's
/// `session.started` was taken in (then the driver's playback reports count).
struct SessionStart {
    let url: String
    let owner: ClientID?
    var takenIn = false
}

/// What a driver reports about one activation or session, delivered in order to whoever waits.
enum SessionEvent: Sendable {
    case activated
    case activationFailed(MediaDeviceError)
    case pairingRequested(reason: String?, method: MediaOutputDevice.AuthorizationMethod)
    case started(application: String?, state: PlaybackStatus)
    /// `started`, taken in as it was read (`Supervisor.sessionStarted`): nil, or why it could not be.
    case takenIn(MediaDeviceError?)
    case sessionFailed(MediaDeviceError)
    /// The driver died or the wait timed out.
    case aborted(MediaDeviceError)
}

/// A mailbox for one session's events: events that arrive before anyone waits are kept.
/// Delivered on the loop and awaited from anywhere, so its state is behind a lock.
final class SessionMailbox: Sendable {
    /// The driver whose reports this mailbox receives; its death aborts the wait.
    let protocolID: String
    private let state = Mutex<(queued: [SessionEvent], waiter: CheckedContinuation<SessionEvent, Never>?, settled: Bool)>(([], nil, false))

    init(protocolID: String) { self.protocolID = protocolID }

    /// Whether a start's outcome was delivered (started, failed, aborted): the wait ends with the
    /// first, so a `session.started` after it is not taken in.
    var isSettled: Bool { state.withLock { $0.settled } }

    /// Marks the start's outcome as had without delivering one: the start ended on its own.
    func settle() { state.withLock { $0.settled = true } }

    func deliver(_ event: SessionEvent) {
        let waiter: CheckedContinuation<SessionEvent, Never>? = state.withLock { state in
            switch event {
            case .started, .takenIn, .sessionFailed, .aborted: state.settled = true
            case .activated, .activationFailed, .pairingRequested: break
            }
            guard let waiter = state.waiter else {
                state.queued.append(event)
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume(returning: event)
    }

    /// Runs on the caller's executor: the supervisor waits here on its loop, where `deliver` runs,
    /// so the event reaches it in the loop's next turn instead of through the global pool.
    nonisolated(nonsending) func next() async -> SessionEvent {
        await withCheckedContinuation { continuation in
            let ready: SessionEvent? = state.withLock { state in
                if !state.queued.isEmpty { return state.queued.removeFirst() }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}

/// The pairing question put to whoever started an activation.
public struct PairingRequest: Sendable {
    public let deviceName: String
    public let protocolName: String
    /// The driver's sentence for the person, if it gave one.
    public let reason: String?
    public let method: MediaOutputDevice.AuthorizationMethod
}
