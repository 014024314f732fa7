/// The new driver's `@main` type: every method of MediaDeviceExtension, compiling and doing the
/// sensible thing for a driver that finds no device yet, with comments saying where the protocol goes.
enum DriverSourceTemplate {
    static func text(_ names: DriverNames) -> String {
        #"""
        import Foundation
        import MediaDevice

        /// The driver of the \#(names.displayName) protocol (\#(names.protocolID)).
        ///
        /// Written by `swift package new-driver`: it builds, meets the supervisor (its three identity
        /// places agree: this `protocolType`, and `protocol` and `exportedType.identifier` in
        /// \#(names.manifestFile)) and finds no device until discovery is written in `startDeviceDiscovery()`.
        /// Every method runs on the main actor, one at a time; report through `routingManager`, which
        /// any thread may call (network callbacks, for instance).
        @main
        final class \#(names.typeName): MediaDeviceExtension {
            var protocolType: UTType { UTType(exportedAs: "\#(names.protocolID)") }
            var supportsSimultaneousSessions: Bool { false }
            lazy var routingManager: MediaDeviceRoutingManager = .routingManager(for: self)

            /// Devices reported with `foundDevice` and not lost since, by id.
            private var devices: [String: MediaOutputDevice] = [:]
            /// Each device's volume (0...1) as last set, by id; a real device reports its own.
            private var volumes: [String: Float] = [:]
            /// The level each muted device had before, by id.
            private var mutedLevels: [String: Float] = [:]

            init() {}

            // MARK: Discovery

            func startDeviceDiscovery() {
                // Discovery goes here: browse for devices (DNS-SD with AvahiDiscovery's ServiceBrowser, SSDP,
                // BlueZ over DBus, ...), then for each one found:
                //     if let device = MediaOutputDevice(id: "stable-id", displayName: "Desk Lamp", capabilities: [.urlPlayback]) {
                //         devices[device.id] = device
                //         routingManager.foundDevice(device)
                //     }
                // `routingManager.lostDevice(_:)` when one goes away, `discoveryFailed(_:)` when browsing cannot
                // run at all (say why in the error: the operator reads it in `mediaroute drivers`).
                // Until then this driver finds no device.
            }

            func stopDeviceDiscovery() {
                // Stop browsing; the devices found stay known until they are lost.
            }

            // MARK: Activation

            func activateDevice(_ device: MediaOutputDevice, session: MediaOutputSession, for deviceFeatures: MediaOutputDevice.Capabilities) {
                // Connect to the device here, then report `activatedDevice`, or `requestPairingCode` when it asks
                // for a code or password (the answer comes to `connectUsingPairingCode`).
                guard devices[device.id] != nil else {
                    routingManager.failedToActivateDevice(device, session: session, error: MediaDeviceError(.deviceNotFound, "\#(names.displayName) has no device \(device.displayName) (it was never found, or was lost)"))
                    return
                }
                routingManager.activatedDevice(device, session: session)
            }

            func connectUsingPairingCode(_ pairingCode: String?, to device: MediaOutputDevice, session: MediaOutputSession) {
                guard pairingCode != nil else {
                    routingManager.failedToActivateDevice(device, session: session, error: MediaDeviceError(.authorizationFailed, "pairing with \(device.displayName) was cancelled"))
                    return
                }
                // Send the code to the device here; on acceptance keep what lets you reconnect without a code
                // in `routingManager.stateDirectory`, which survives restarts.
                routingManager.activatedDevice(device, session: session)
            }

            func deactivateDevice(_ device: MediaOutputDevice, session: MediaOutputSession) {
                // Disconnect from the device here.
            }

            // MARK: Volume

            func setVolume(_ volume: Float, for device: MediaOutputDevice) {
                // Send the level to the device here.
                volumes[device.id] = min(max(volume, 0), 1)
                mutedLevels[device.id] = nil
                routingManager.volumeChanged(for: device)
            }

            func volume(for device: MediaOutputDevice) -> Float {
                volumes[device.id] ?? 0.5
            }

            func changeVolume(by increments: Int, for device: MediaOutputDevice) {
                setVolume(volume(for: device) + Float(increments) * 0.05, for: device)
            }

            func muteDevice(_ device: MediaOutputDevice) {
                guard mutedLevels[device.id] == nil else { return }
                let level = volume(for: device)
                setVolume(0, for: device)
                mutedLevels[device.id] = level
            }

            func unmuteDevice(_ device: MediaOutputDevice) {
                guard let level = mutedLevels[device.id] else { return }
                setVolume(level, for: device)
            }

            func isDeviceMuted(_ device: MediaOutputDevice) -> Bool {
                mutedLevels[device.id] != nil
            }

            // MARK: Sessions

            func startSession(_ session: MediaOutputSession, identifier: String?, url: URL) {
                // Tell the device to play `url` here, then report `routingManager.started(application:playbackControl:session:)`
                // with an object conforming to AVInterfaceControllable, through which the system plays, pauses and seeks.
                routingManager.sessionFailed(session, error: MediaDeviceError(.unsupported, "the \#(names.displayName) driver does not play media yet"))
            }

            func stopSession(_ session: MediaOutputSession) {
                // Stop playback on the device here.
            }

            // MARK: Data

            func sendData(_ data: Data, toApplication applicationIdentifier: String, session: MediaOutputSession) {
                // Forward an app's data to the application on the device here; the device's answers go back with
                // `routingManager.sendData(_:toApplication:session:)`.
            }
        }

        """#
    }
}
