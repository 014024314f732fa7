import DBus
import Foundation
import MediaDevice

/// The Bluetooth driver: headphones and speakers (A2DP sinks) as routes, on BlueZ's D-Bus API.
/// Lists audio sinks while the picker is open, pairs through our BlueZ agent, streams SBC to the
/// transport BlueZ configures with our A2DP source endpoint, and carries volume both ways and the
/// device's buttons. Nothing here is specific to the test stand-in: it speaks to bluetoothd.
@main
final class BluetoothDriver: MediaDeviceExtension, RealtimeSampleHandling {
    static let protocolID = "org.mediaroute.bluetooth"
    var protocolType: UTType { UTType(exportedAs: Self.protocolID) }
    /// One A2DP stream at a time: a source has one endpoint, and the person listens to one device.
    var supportsSimultaneousSessions: Bool { false }
    lazy var routingManager: MediaDeviceRoutingManager = .routingManager(for: self)

    let blueZ = BlueZConnection()
    /// Whether the picker wants discovery, and whether an adapter runs it for us now.
    var discoveryWanted = false
    var discoveringOn: DBusObjectPath?
    /// Devices reported to the system, by id.
    var reported: [String: MediaOutputDevice] = [:]
    /// Activations in progress (pairing, connecting) and activated devices, by session id.
    var activating: [String: ActiveSpeaker] = [:]
    var speakers: [String: ActiveSpeaker] = [:]
    /// What the person was asked for, waiting for `connectUsingPairingCode`, by session id.
    var pendingCodes: [String: CheckedContinuation<String?, Never>] = [:]
    /// Activations whose pairing the person cancelled, so the failure BlueZ reports says so.
    var cancelledByPerson: Set<String> = []

    init() {
        blueZ.onEvent = { [unowned self] event in self.blueZEvent(event) }
        blueZ.agent.ask = { [unowned self] device, request in await self.askPerson(device, request) }
        blueZ.agent.isActivating = { [unowned self] device in self.activating.values.contains { $0.path == device } }
        blueZ.agent.cancelled = { [unowned self] in self.blueZCancelledPairing() }
        blueZ.endpoint.cleared = { [unowned self] transport in self.transportGone(transport) }
        blueZ.player.pressed = { [unowned self] button in self.buttonPressed(button) }
    }

    // MARK: Discovery

    func startDeviceDiscovery() {
        discoveryWanted = true
        Task { await self.discover() }
    }

    func stopDeviceDiscovery() {
        discoveryWanted = false
        guard let adapter = discoveringOn else { return }
        discoveringOn = nil
        Task { try? await self.blueZ.call(adapter, BlueZ.adapter, "StopDiscovery") }
    }

    /// Starts discovery on the adapter if the picker wants it and it is not running; otherwise says
    /// what is missing (BlueZ, an adapter, power), so the operator can act.
    func discover() async {
        guard discoveryWanted, discoveringOn == nil else { return }
        do {
            try await blueZ.start()
        } catch {
            return routingManager.discoveryFailed(error)
        }
        guard blueZ.isPresent else {
            return routingManager.discoveryFailed(MediaDeviceError(.discoveryFailed, "BlueZ (org.bluez) is not on the system bus: is bluetoothd running?"))
        }
        guard let adapter = blueZ.objects.preferredAdapter else {
            return routingManager.discoveryFailed(MediaDeviceError(.discoveryFailed, "BlueZ lists no Bluetooth adapter"))
        }
        guard adapter.powered else {
            return routingManager.discoveryFailed(MediaDeviceError(.discoveryFailed, "Bluetooth adapter \(adapter.path.rawValue.split(separator: "/").last ?? "") is powered off"))
        }
        discoveringOn = adapter.path
        report(blueZ.objects.devices.values)
        do {
            let filter: [String: DBusValue] = ["UUIDs": .strings([BlueZ.audioSinkUUID]), "Transport": .string("bredr")]
            try await blueZ.call(adapter.path, BlueZ.adapter, "SetDiscoveryFilter", [.properties(filter)])
            try await blueZ.call(adapter.path, BlueZ.adapter, "StartDiscovery")
        } catch where error.name == BlueZ.Error.inProgress {
            // Already discovering for us (a start racing another): nothing to do.
        } catch {
            discoveringOn = nil
            routingManager.discoveryFailed(MediaDeviceError(.discoveryFailed, "\(adapter.path) cannot discover: \(error)"))
        }
    }

    /// Reports audio sinks not reported yet, and changes to those that were.
    func report(_ devices: some Sequence<BluetoothDevice>) {
        for device in devices where device.isAudioSink {
            guard let output = device.mediaOutputDevice, reported[output.id] != output else { continue }
            reported[output.id] = output
            routingManager.foundDevice(output)
        }
    }

    func forget(_ device: BluetoothDevice) {
        guard let output = reported.removeValue(forKey: device.id) else { return }
        routingManager.lostDevice(output)
    }
}
