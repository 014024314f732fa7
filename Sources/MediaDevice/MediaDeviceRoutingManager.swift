import Foundation
import MediaRouteIPC
import Synchronization

/// How a driver reports to the system: devices found and lost, activation results, pairing
/// requests, sessions, volume changes and data for apps.
///
/// Callable from any thread; reports reach the supervisor in the order they were made. Obtain it
/// with `routingManager(for: self)`.
public final class MediaDeviceRoutingManager: Sendable {
    private enum Outbox {
        case waiting([(String, JSONObject)])
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

    public func foundDevice(_ device: MediaOutputDevice) { post(DriverMethod.found, ["device": device.json]) }
    public func lostDevice(_ device: MediaOutputDevice) { post(DriverMethod.lost, ["id": .string(device.id)]) }
    /// Replaces what the driver reported with these devices (changed names, capabilities, ...).
    public func updateDevices(_ devices: [MediaOutputDevice]) { post(DriverMethod.updated, ["devices": .array(devices.map(\.json))]) }
    /// Discovery could not run (not: found nothing). Say why, so the operator can act.
    public func discoveryFailed(_ error: any Error) {
        post(DriverMethod.discoveryFailed, ["error": Self.deviceError(error, default: .discoveryFailed).json])
    }

    // MARK: Activation

    public func activatedDevice(_ device: MediaOutputDevice, session: MediaOutputSession) {
        post(DriverMethod.activated, ["device": .string(device.id), "session": .string(session.id)])
    }

    public func failedToActivateDevice(_ device: MediaOutputDevice, session: MediaOutputSession, error: any Error) {
        post(DriverMethod.activationFailed, ["device": .string(device.id), "session": .string(session.id),
                                             "error": Self.deviceError(error, default: .connectionFailed).json])
    }

    /// Asks the person who started the activation for a code or password; the answer arrives in
    /// `connectUsingPairingCode(_:to:session:)` (nil if they cancelled).
    public func requestPairingCode(for device: MediaOutputDevice, session: MediaOutputSession, reason: String,
                                   authorizationMethod: MediaOutputDevice.AuthorizationMethod) {
        post(DriverMethod.pairingRequested, ["device": .string(device.id), "session": .string(session.id),
                                             "reason": .string(reason), "authorizationMethod": authorizationMethod.json])
    }

    // MARK: Sessions

    /// Playback started; the system mirrors `playbackControl` from now on (reads its state, writes
    /// its settable properties) until `stopSession`.
    @MainActor
    public func started(application: String?, playbackControl: any AVInterfaceControllable, session: MediaOutputSession) {
        DriverRuntime.playbackControls[session.id] = playbackControl
        var params: JSONObject = ["session": .string(session.id), "state": .object(PlaybackStatus(of: playbackControl).json)]
        if let application { params["application"] = .string(application) }
        DriverRuntime.lastSnapshots[session.id] = params["state"]?.objectValue
        post(DriverMethod.sessionStarted, params)
    }

    public func sessionFailed(_ session: MediaOutputSession, error: any Error) {
        post(DriverMethod.sessionFailed, ["session": .string(session.id), "error": Self.deviceError(error, default: .sessionFailed).json])
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
        post(DriverMethod.volumeChanged, ["device": .string(device.id), "volume": driver.volume(for: device).json,
                                          "muted": .bool(driver.isDeviceMuted(device))])
    }

    /// Sends data from the device's application toward the app of the session.
    public func sendData(_ data: Data, toApplication applicationIdentifier: String, session: MediaOutputSession) {
        post(DriverMethod.dataToApplication, ["session": .string(session.id), "application": .string(applicationIdentifier),
                                              "data": .string(data.base64EncodedString())])
    }

    // MARK: Plumbing

    /// Posting happens under the lock, so reports from different threads keep one order, and none
    /// made while the queue drains can overtake the queued ones.
    func post(_ method: String, _ params: JSONObject) {
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
