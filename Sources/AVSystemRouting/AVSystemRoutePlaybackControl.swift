import Foundation
import MediaDevice
import MediaRouteWire

/// The app's mirror of a session's playback on the device: the same `AVInterfaceControllable` the
/// driver implements. Setting a property sends the command to the driver (in the order set); the
/// driver's updates replace the state here as they arrive.
///
/// The setters cannot throw: a command the driver refuses is in `lastError`, and `synchronize()`
/// waits for every command set so far and throws the first failure.
@MainActor
public final class AVSystemRoutePlaybackControl: AVInterfaceControllable {
    /// The latest state: the driver's last report, with each command's value from the moment it is
    /// set until the driver next reports (within a second; a refused command is undone then).
    public private(set) var status: PlaybackStatus
    /// The last command the driver or daemon refused.
    public private(set) var lastError: (any Error)?
    /// Set once the session ended (stopped, or its route went away); commands then fail with it.
    public private(set) var endError: AVSystemRoutingError?

    private let session: String
    private let daemon: DaemonConnection
    private enum Command {
        case change(PlaybackChanges)
        case barrier(CheckedContinuation<Void, any Error>)
    }
    private let commands: AsyncStream<Command>.Continuation
    private var watchers: [UUID: AsyncStream<PlaybackStatus>.Continuation] = [:]
    private var firstUnreportedError: (any Error)?
    /// Commands set and not yet answered. A report made before the driver applied them would undo
    /// their values here, so reports are dropped until the answer, which carries the state after.
    private var commandsInFlight = 0
    /// The daemon's revision of the state shown (IPC/README.md §11.1): notifications arrive on a task
    /// of their own and can come after a command's answer, so a state older than the one shown is dropped.
    private var revision: Int64

    nonisolated init(session: String, playback: SessionPlayback, daemon: DaemonConnection) {
        self.session = session
        self.status = playback.status
        self.revision = playback.revision
        self.daemon = daemon
        let (stream, continuation) = AsyncStream<Command>.makeStream()
        commands = continuation
        Task { @MainActor [weak self] in
            for await command in stream {
                guard let self else { return }
                await self.run(command)
            }
        }
    }

    // MARK: AVInterfaceControllable

    public var isPlaying: Bool {
        get { status.isPlaying }
        set {
            send(PlaybackChanges(isPlaying: newValue)) {
                $0.isPlaying = newValue
                $0.state = newValue ? .playing : .paused
            }
        }
    }
    public var state: AVInterfacePlaybackState { status.state }
    public var currentPlaybackPosition: Double {
        get { status.position }
        set { send(PlaybackChanges(position: newValue)) { $0.position = newValue } }
    }
    public var playbackSpeed: Float {
        get { status.speed }
        set { send(PlaybackChanges(speed: newValue)) { $0.speed = newValue } }
    }
    public var timeRange: ClosedRange<Double>? { status.timeRange }
    public var volume: Float {
        get { status.volume }
        set { send(PlaybackChanges(volume: newValue)) { $0.volume = newValue } }
    }
    public var isMuted: Bool {
        get { status.isMuted }
        set { send(PlaybackChanges(muted: newValue)) { $0.isMuted = newValue } }
    }
    public var audioOptions: [String] { status.audioOptions }
    public var selectedAudioOption: String? {
        get { status.selectedAudioOption }
        set { send(PlaybackChanges(selectedAudioOption: .some(newValue))) { $0.selectedAudioOption = newValue } }
    }
    public var subtitleOptions: [String] { status.subtitleOptions }
    public var selectedSubtitleOption: String? {
        get { status.selectedSubtitleOption }
        set { send(PlaybackChanges(selectedSubtitleOption: .some(newValue))) { $0.selectedSubtitleOption = newValue } }
    }
    public var metadata: AVInterfaceMetadata { status.metadata }

    // MARK: Observing and waiting

    /// Every state from now on (the driver's updates, and the local ones as commands are set),
    /// until the session ends.
    public func updates() -> AsyncStream<PlaybackStatus> {
        let (stream, continuation) = AsyncStream<PlaybackStatus>.makeStream(bufferingPolicy: .bufferingNewest(64))
        if endError != nil {
            continuation.finish()
            return stream
        }
        let id = UUID()
        watchers[id] = continuation
        continuation.onTermination = { _ in Task { @MainActor [weak self] in self?.watchers[id] = nil } }
        return stream
    }

    /// Waits until every command set so far reached the driver, and throws the first that failed.
    public func synchronize() async throws {
        try await withCheckedThrowingContinuation { waiter in
            if case .terminated = commands.yield(.barrier(waiter)) {
                waiter.resume(throwing: endError ?? AVSystemRoutingError(.sessionEnded, "the session ended"))
            }
        }
    }

    // MARK: Plumbing

    /// Sends a command, and shows its value at once, unless the session ended (then the final
    /// state stays as it was and the command fails with the reason).
    private func send(_ change: PlaybackChanges, showing local: (inout PlaybackStatus) -> Void) {
        if let endError {
            lastError = endError
            return
        }
        local(&status)
        publish()
        commandsInFlight += 1
        commands.yield(.change(change))
    }

    private func run(_ command: Command) async {
        switch command {
        case .change(let change):
            defer { commandsInFlight -= 1 }
            do {
                if let endError { throw endError }
                let route = try await daemon.call(App.SetPlayback(session: session, changes: change))
                if let playback = route.playback { show(playback) }
            } catch {
                lastError = error
                if firstUnreportedError == nil { firstUnreportedError = error }
            }
        case .barrier(let waiter):
            let error = firstUnreportedError
            firstUnreportedError = nil
            if let error { waiter.resume(throwing: error) } else { waiter.resume() }
        }
    }

    /// The driver's state from a `session.state` notification.
    func report(_ playback: SessionPlayback) {
        guard commandsInFlight == 0 else { return }
        show(playback)
    }

    /// Shows a state unless it is older than the one shown. A state without a revision (0: the daemon
    /// did not stamp it) cannot be placed, and counts as the newest, as it always has.
    private func show(_ playback: SessionPlayback) {
        guard endError == nil else { return }
        let stateRevision = playback.revision == 0 ? revision : playback.revision
        guard stateRevision >= revision else { return }
        revision = stateRevision
        status = playback.status
        publish()
    }

    /// The session ended: the final state stays readable, later commands fail with `error`.
    func end(_ final: PlaybackStatus?, error: AVSystemRoutingError) {
        guard endError == nil else { return }
        if let final { status = final }
        endError = error
        publish()
        watchers.values.forEach { $0.finish() }
        watchers.removeAll()
        commands.finish()  // what was set before still runs, and fails with `error`
    }

    private func publish() {
        for watcher in watchers.values { watcher.yield(status) }
    }
}
