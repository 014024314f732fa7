import Foundation
import MediaRouteIPC
import MediaRouteWire
import Synchronization

/// How a driver reports to the system: devices found and lost, activation results, pairing
/// requests, sessions, volume changes and data for apps.
///
/// Callable from any thread; reports reach the supervisor in the order they were made. Obtain it
/// with `routingManager(for: self)`.
public final class MediaDeviceRoutingManager: Sendable {
    private enum Outbox {
        case waiting([(method: String, params: JSONObject)])
        case connected(Connection)
    }
    private let outbox = Mutex(Outbox.waiting([]))

    init() {}

    /// The routing manager of this driver process.
    public static func routingManager(for extension: some MediaDeviceExtension) -> MediaDeviceRoutingManager {
        DriverRuntime.routingManager
    }

    /// A directory only this driver uses, kept across restarts: store pairing tokens and credentials here.
    public var stateDirectory: String {
        ProcessInfo.processInfo.environment["MEDIAROUTE_STATE_DIRECTORY"] ?? FileManager.default.currentDirectoryPath
    }

    // MARK: Discovery

    public func foundDevice(_ device: MediaOutputDevice) { post(FromDriver.DeviceFound(device: device)) }
    public func lostDevice(_ device: MediaOutputDevice) { post(FromDriver.DeviceLost(id: device.id)) }
    /// Replaces what the driver reported with these devices (changed names, capabilities, ...).
    public func updateDevices(_ devices: [MediaOutputDevice]) { post(FromDriver.DevicesUpdated(devices: devices)) }
    /// Discovery could not run (not: found nothing). Say why, so the operator can act.
    public func discoveryFailed(_ error: any Error) {
        post(FromDriver.DiscoveryFailed(error: Self.deviceError(error, default: .discoveryFailed)))
    }

    // MARK: Activation

    public func activatedDevice(_ device: MediaOutputDevice, session: MediaOutputSession) {
        post(FromDriver.Activated(device: device.id, session: session.id))
    }

    /// The activation did not happen. After a wrong code, either ask again (`requestPairingCode`)
    /// or give up here with `.authorizationFailed`; the supervisor waits for one or the other.
    public func failedToActivateDevice(_ device: MediaOutputDevice, session: MediaOutputSession, error: any Error) {
        post(FromDriver.ActivationFailed(device: device.id, session: session.id, error: Self.deviceError(error, default: .connectionFailed)))
    }

    /// Linux addition: an active device dropped the activation on its own (its connection closed,
    /// it rebooted, another controller took it) while it may still be discoverable. The route ends
    /// (apps hear `oldDeviceUnavailable`) and `deactivateDevice` follows to release the session.
    public func deviceDeactivated(_ device: MediaOutputDevice, session: MediaOutputSession, error: any Error) {
        post(FromDriver.Deactivated(device: device.id, session: session.id, error: Self.deviceError(error, default: .connectionFailed)))
    }

    /// Asks the person who started the activation for a code or password; the answer arrives in
    /// `connectUsingPairingCode(_:to:session:)` (nil if they cancelled). `reason` is shown to the
    /// person once, with the prompt: say what to enter ("Enter the code the TV shows.").
    public func requestPairingCode(for device: MediaOutputDevice, session: MediaOutputSession, reason: String,
                                   authorizationMethod: MediaOutputDevice.AuthorizationMethod) {
        post(FromDriver.PairingRequested(device: device.id, session: session.id, reason: reason, authorizationMethod: authorizationMethod))
    }

    // MARK: Sessions

    /// Playback started; the system mirrors `playbackControl` from now on (reads its state, writes
    /// its settable properties) until `stopSession`.
    @MainActor
    public func started(application: String?, playbackControl: any AVInterfaceControllable, session: MediaOutputSession) {
        DriverRuntime.playbackControls[session.id] = playbackControl
        let state = PlaybackStatus(of: playbackControl)
        DriverRuntime.lastSnapshots[session.id] = state
        post(FromDriver.SessionStarted(session: session.id, application: application, state: state))
    }

    public func sessionFailed(_ session: MediaOutputSession, error: any Error) {
        post(FromDriver.SessionFailed(session: session.id, error: Self.deviceError(error, default: .sessionFailed)))
    }

    /// Pushes the session's playback state now, instead of at the next cadence tick.
    @MainActor
    public func playbackStateChanged(session: MediaOutputSession) {
        DriverRuntime.publishPlaybackState(force: true, only: session.id)
    }

    /// The device changed its own volume (buttons, remote): reads `volume(for:)` and
    /// `isDeviceMuted(_:)` and tells the system.
    @MainActor
    public func volumeChanged(for device: MediaOutputDevice) {
        guard let driver = DriverRuntime.driver else { return }
        post(FromDriver.VolumeChanged(device: device.id, volume: driver.volume(for: device), muted: driver.isDeviceMuted(device)))
    }

    /// Sends data from the device's application toward the app of the session.
    public func sendData(_ data: Data, toApplication applicationIdentifier: String, session: MediaOutputSession) {
        post(FromDriver.DataToApplication(session: session.id, application: applicationIdentifier, data: Base64Payload(data)))
    }

    /// A button on the device (play, pause, next, ...) while an app's sample streams play there:
    /// the app hears it and acts (a URL session the driver plays itself is the driver's to control).
    public func remoteCommand(_ command: MediaRemoteCommand, session: MediaOutputSession) {
        post(FromDriver.RemoteCommand(session: session.id, command: command))
    }

    // MARK: Plumbing

    /// Posting happens under the lock, so reports from different threads keep one order, and none
    /// made while the queue drains can overtake the queued ones.
    func post<Report: WireNotification>(_ report: Report) {
        let (method, params) = (Report.method, report.params)
        outbox.withLock { state in
            switch state {
            case .waiting(var queued):
                queued.append((method, params))
                state = .waiting(queued)
            case .connected(let connection):
                connection.post(method, params)
            }
        }
    }

    /// Sends what was reported before the handshake, then sends directly.
    func attach(_ connection: Connection) {
        outbox.withLock { state in
            if case .waiting(let queued) = state {
                for (method, params) in queued { connection.post(method, params) }
            }
            state = .connected(connection)
        }
    }

    static func deviceError(_ error: any Error, default code: MediaDeviceError.Code) -> MediaDeviceError {
        if let error = error as? MediaDeviceError { return error }
        return MediaDeviceError(code, "\(code.defaultMessage): \(error)")
    }
}
