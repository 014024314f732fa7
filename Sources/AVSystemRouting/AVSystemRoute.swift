import Foundation
import MediaDevice
import MediaRouteWire
import Synchronization

/// An active route to a remote device, of one of the app's protocols: what the app starts media
/// sessions on and talks to the device's application through.
///
/// A route is active from its `.activate` event until its `.deactivate` event; after that every
/// use fails with `AVSystemRoutingError.Code.routeInactive`.
public final class AVSystemRoute: Sendable, Hashable, CustomStringConvertible {
    /// Whether the device is there.
    public enum State: Sendable, Hashable {
        /// The device is there: the route takes sessions, streams and data.
        case active
        /// The device went away on its own (rebooted, out of range, its driver crashed) and
        /// mediarouted waits for it until the date: its sessions are paused at their positions, and
        /// commands fail until it is back. It comes back by itself (a route change
        /// `newDeviceAvailable`, the state `active` again), its sessions still paused: resume them
        /// with `isPlaying = true`. Past the date, the route ends (`.deactivate`).
        case reconnecting(until: Date)
    }

    /// Who plays a session on the device.
    public enum LaunchMode: Sendable, Hashable {
        /// The app's counterpart application on the device plays it; the session gets a data channel to it.
        case application
        /// The device's own media player plays it; the session has no data channel.
        case player
    }

    /// The route's id in mediarouted (the session its activation opened).
    public let identifier: String
    /// The media sharing protocol the route goes through.
    public let protocolType: UTType
    /// The protocol's display name (its exported type's description).
    public let protocolName: String
    /// Messages between this app and the device, while the route is active, independent of sessions.
    public let routeDataChannel: AVSystemRouteDataChannel
    /// Whether the route takes a second session while one plays.
    public let supportsSimultaneousSessions: Bool

    private struct Storage {
        var device: MediaOutputDevice
        var isActive = true
        /// mediarouted says a session plays on the route (this app's or another's).
        var busy: Bool
        var volume: Float?
        var isMuted: Bool?
        var reconnectingUntil: Double?
        var sessions: [AVSystemRouteSession] = []
    }
    private let storage: Mutex<Storage>
    private let commandWatchers = Mutex<[UUID: AsyncStream<MediaRemoteCommand>.Continuation]>([:])
    let daemon: DaemonConnection
    let registry: MediaSessionRegistry

    /// A route as mediarouted described it: decoded, and so checked, where it arrived.
    init(_ description: RouteDescription, daemon: DaemonConnection, registry: MediaSessionRegistry) {
        identifier = description.session
        protocolType = UTType(exportedAs: description.protocol)
        protocolName = description.protocolName
        supportsSimultaneousSessions = description.simultaneousSessions
        routeDataChannel = AVSystemRouteDataChannel(target: .route(description.session), daemon: daemon)
        self.daemon = daemon
        self.registry = registry
        storage = Mutex(Storage(device: description.device, busy: description.busy, volume: description.volume, isMuted: description.muted,
                            reconnectingUntil: description.reconnectingUntil))
    }

    /// The device at the other end, as its driver last described it.
    public var device: MediaOutputDevice { storage.withLock { $0.device } }
    /// The device's name, for the app's interface.
    public var routeDisplayName: String { device.displayName }
    /// A freedesktop icon name for the kind of device (`video-display`, `audio-speakers`, ...).
    public var routeSymbolName: String { Self.symbolName(for: device.deviceType) }
    /// True from the route's `.activate` event until its `.deactivate` event, also while it reconnects.
    public var isActive: Bool { storage.withLock { $0.isActive } }
    /// Whether its device is there, or mediarouted waits for it to come back.
    public var state: State { storage.withLock { $0.reconnectingUntil.map { .reconnecting(until: Date(timeIntervalSince1970: $0)) } ?? .active } }
    /// The device's volume (0...1) and mute, as last reported; nil until known.
    public var volume: Float? { storage.withLock { $0.volume } }
    public var isMuted: Bool? { storage.withLock { $0.isMuted } }
    /// The sessions added to this route and not removed.
    public var sessions: [AVSystemRouteSession] { storage.withLock { $0.sessions } }
    /// This route as an output of the current route.
    public var output: AVSystemRoutePortDescription {
        let device = device
        return AVSystemRoutePortDescription(portType: AVSystemRoutePort(device.deviceType), portName: device.displayName, uid: device.id, protocolType: protocolType)
    }

    /// Adds a session to start on this route. False when the route cannot take it: it is no longer
    /// active, the session belongs to a route already, or a session plays here and the driver runs
    /// one at a time.
    public func addSession(_ session: AVSystemRouteSession) -> Bool {
        guard session.claim(by: self) else { return false }
        let added = storage.withLock { state -> Bool in
            guard state.isActive, !state.sessions.contains(where: { $0 === session }) else { return false }
            let taken = state.busy || state.sessions.contains { !$0.isFinished }
            guard !taken || supportsSimultaneousSessions else { return false }
            state.sessions.append(session)
            return true
        }
        if !added { session.release(by: self) }
        return added
    }

    /// Removes a session from the route, stopping it first if it still plays.
    public func removeSession(_ session: AVSystemRouteSession) {
        let removed = storage.withLock { state -> Bool in
            guard let index = state.sessions.firstIndex(where: { $0 === session }) else { return false }
            state.sessions.remove(at: index)
            return true
        }
        guard removed else { return }
        session.release(by: self)
        if session.mediaSession.map({ !$0.hasEnded }) == true { Task { try? await session.stop() } }
    }

    public static func == (a: AVSystemRoute, b: AVSystemRoute) -> Bool { a === b }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
    public var description: String { "\(routeDisplayName) through \(protocolName) (\(identifier))" }

    // MARK: From the controller

    /// What an update changed: the device's description, and whether the device went away or came back.
    struct Change {
        var description = false
        var wentAway = false
        var cameBack = false
    }

    /// Takes mediarouted's latest description.
    func update(_ description: RouteDescription) -> Change {
        storage.withLock { state in
            var change = Change()
            change.description = state.device != description.device || state.volume != description.volume || state.isMuted != description.muted
            change.wentAway = state.reconnectingUntil == nil && description.reconnectingUntil != nil
            change.cameBack = state.reconnectingUntil != nil && description.reconnectingUntil == nil
            state.device = description.device
            state.busy = description.busy
            state.volume = description.volume
            state.isMuted = description.muted
            state.reconnectingUntil = description.reconnectingUntil
            return change
        }
    }

    /// A session of this app started or stopped on the route itself (not beside it).
    func setBusy(_ busy: Bool) { storage.withLock { $0.busy = busy } }

    /// The route ended: its channel closes and its sessions end with `error`.
    func invalidate(_ error: AVSystemRoutingError) async {
        let sessions = storage.withLock { state -> [AVSystemRouteSession] in
            state.isActive = false
            return state.sessions
        }
        routeDataChannel.close(error)
        for watcher in commandWatchers.withLock({ $0.values }) { watcher.finish() }
        for session in sessions {
            if let media = session.mediaSession { await media.end(final: nil, error: error) }
        }
    }

    /// The device's own buttons (a headphone's play/pause, a car's next), while this app's sample
    /// streams play on the route: act on them as on any remote control event. A URL session the
    /// device plays is controlled by the system instead; its state changes reach the session.
    /// The stream finishes when the route ends.
    public func remoteCommands() -> AsyncStream<MediaRemoteCommand> {
        let (stream, continuation) = AsyncStream<MediaRemoteCommand>.makeStream()
        let id = UUID()
        commandWatchers.withLock { $0[id] = continuation }
        continuation.onTermination = { [weak self] _ in self?.commandWatchers.withLock { _ = $0.removeValue(forKey: id) } }
        if !isActive { continuation.finish() }
        return stream
    }

    func deliver(_ command: MediaRemoteCommand) {
        for watcher in commandWatchers.withLock({ $0.values }) { watcher.yield(command) }
    }

    static func symbolName(for type: MediaOutputDevice.DeviceType) -> String {
        switch type {
        case .tv: "video-display"
        case .speaker, .bluetoothSpeaker: "audio-speakers"
        case .headphones: "audio-headphones"
        case .receiver, .car: "audio-card"
        case .setTopBox: "multimedia-player"
        case .computer: "computer"
        case .unknown: "network-wireless"
        }
    }
}
