import Foundation
import MediaRouteIPC

/// A media sharing protocol driver: discovery, activation, pairing, sessions and volume for one
/// protocol. Write one `@main` type conforming to this protocol; the SDK's `main()` runs the IPC
/// with the supervisor and calls these methods.
///
/// Every method runs on the **main actor**, one at a time, in the order the supervisor sent them,
/// so a driver needs no locks of its own. Report results through `MediaDeviceRoutingManager`,
/// which may be called from any thread (network callbacks, for instance).
@MainActor
public protocol MediaDeviceExtension {
    /// Must equal the manifest's `protocol` and `exportedType.identifier`, or the supervisor refuses the driver.
    var protocolType: UTType { get }
    /// Whether the driver can run more than one `MediaOutputSession` at once; the supervisor enforces it.
    var supportsSimultaneousSessions: Bool { get }

    init()

    func startDeviceDiscovery()
    func stopDeviceDiscovery()

    /// Connect, then report `activatedDevice`, `failedToActivateDevice` or `requestPairingCode`.
    func activateDevice(_ device: MediaOutputDevice, session: MediaOutputSession, for deviceFeatures: MediaOutputDevice.Capabilities)
    /// The person's code or password; nil means they cancelled.
    func connectUsingPairingCode(_ pairingCode: String?, to device: MediaOutputDevice, session: MediaOutputSession)
    func deactivateDevice(_ device: MediaOutputDevice, session: MediaOutputSession)

    func setVolume(_ volume: Float, for device: MediaOutputDevice)
    func volume(for device: MediaOutputDevice) -> Float
    func changeVolume(by increments: Int, for device: MediaOutputDevice)
    func muteDevice(_ device: MediaOutputDevice)
    /// Linux addition: the operator's `volume DEVICE unmute`. Defaults to restoring the current level.
    func unmuteDevice(_ device: MediaOutputDevice)
    func isDeviceMuted(_ device: MediaOutputDevice) -> Bool

    /// Start playing `url`; report `started(application:playbackControl:session:)` or `sessionFailed`.
    func startSession(_ session: MediaOutputSession, identifier: String?, url: URL)
    func stopSession(_ session: MediaOutputSession)

    /// Forward `data` from an app to the application on the device.
    func sendData(_ data: Data, toApplication applicationIdentifier: String, session: MediaOutputSession)
    /// Data from an app arrives here; the default forwards it to `sendData(_:toApplication:session:)`.
    func receiveData(_ data: Data, fromApplication applicationIdentifier: String, session: MediaOutputSession)
}

extension MediaDeviceExtension {
    public func receiveData(_ data: Data, fromApplication applicationIdentifier: String, session: MediaOutputSession) {
        sendData(data, toApplication: applicationIdentifier, session: session)
    }

    public func unmuteDevice(_ device: MediaOutputDevice) {
        setVolume(volume(for: device), for: device)
    }

    /// The driver's entry point: runs the IPC with the supervisor until it closes the channel. The
    /// main thread runs both the connection's loop and the main actor (see `EventLoop(mainThreadNamed:)`).
    public static func main() {
        let loop = EventLoop(mainThreadNamed: "driver")
        Task { await DriverRuntime.run(Self.self, on: loop) }
        loop.runOnMainThread()
    }
}
