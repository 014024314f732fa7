import DBus
import MediaDevice

/// What BlueZ says on its own: devices coming and going, adapters powered on and off, bluetoothd
/// leaving and coming back, transports taken away, and the device's own volume.
extension BluetoothDriver {
    func blueZEvent(_ event: BlueZConnection.Event) {
        switch event {
        case .appeared:
            Task { await self.discover() }
        case .vanished:
            discoveringOn = nil
            for speaker in Array(speakers.values) { dropped(speaker, because: "bluetoothd stopped") }
            if discoveryWanted {
                routingManager.discoveryFailed(MediaDeviceError(.discoveryFailed, "BlueZ (org.bluez) left the system bus: bluetoothd stopped"))
            }
        case .changed(let changes):
            for change in changes { apply(change) }
        }
    }

    private func apply(_ change: BlueZObjects.Change) {
        switch change {
        case .deviceAppeared(let device):
            if discoveringOn != nil { report([device]) }
        case .deviceChanged(let old, let new):
            if reported[new.id] != nil || discoveringOn != nil { report([new]) }
            if old.connected, !new.connected, let speaker = speaker(at: new.path) {
                dropped(speaker, because: "\(speaker.device.displayName) disconnected (switched off or out of range)")
            }
        case .deviceRemoved(let device):
            if let speaker = speaker(at: device.path) { dropped(speaker, because: "BlueZ removed \(speaker.device.displayName)") }
            forget(device)
        case .adapterChanged(let adapter):
            if !adapter.powered, discoveringOn == adapter.path {
                discoveringOn = nil
                routingManager.discoveryFailed(MediaDeviceError(.discoveryFailed, "Bluetooth adapter \(adapter.path.rawValue.split(separator: "/").last ?? "") was powered off"))
            }
            if adapter.powered { Task { await self.discover() } }
        case .adapterRemoved(let path):
            if discoveringOn == path { discoveringOn = nil }
        case .transportAdded(let transport), .transportChanged(let transport):
            if let speaker = speaker(at: transport.device), speaker.transport == transport.path {
                if let volume = transport.volume { speaker.deviceReported(volume: volume) }
                routingManager.volumeChanged(for: speaker.device)
            }
        case .transportRemoved(let transport):
            transportGone(transport.path)
        }
    }

    func speaker(at path: DBusObjectPath) -> ActiveSpeaker? { speakers.values.first { $0.path == path } }

    /// BlueZ took the transport back (ClearConfiguration, or the object went away). Whether the
    /// whole link went (switched off, out of range) BlueZ says in the same breath: asking it after
    /// the transport's removal gets the answer in order.
    func transportGone(_ transport: DBusObjectPath) {
        guard let speaker = speakers.values.first(where: { $0.transport == transport }) else { return }
        speaker.transport = nil
        Task {
            let connected = try? await self.blueZ.call(speaker.path, BlueZ.properties, "Get", [.string(BlueZ.device), .string("Connected")]).first?.bool
            let name = speaker.device.displayName
            self.dropped(speaker, because: connected == true ? "\(name) closed its audio stream" : "\(name) disconnected (switched off or out of range)")
        }
    }

    /// The device dropped the activation: the route ends (apps hear that the old device is
    /// unavailable, and what played pauses rather than move to another output).
    func dropped(_ speaker: ActiveSpeaker, because why: String) {
        guard speakers.removeValue(forKey: speaker.session.id) != nil else { return }
        log(why)
        speaker.shutDown()
        blueZ.setPlayerStatus("stopped")
        routingManager.deviceDeactivated(speaker.device, session: speaker.session, error: MediaDeviceError(.connectionFailed, why))
    }

    /// A button on the device (AVRCP), through our registered player: play and pause drive the
    /// session played here.
    func buttonPressed(_ button: RemoteControlPlayer.Button) {
        guard let speaker = speakers.values.first else { return }
        guard let playback = speaker.playback else {
            // An app's samples play: the app decides what its buttons do.
            return routingManager.remoteCommand(button.command, session: speaker.session)
        }
        switch button {
        case .play: playback.isPlaying = true
        case .pause, .stop: playback.isPlaying = false
        case .fastForward, .rewind:
            playback.currentPlaybackPosition = max(0, playback.currentPlaybackPosition + (button == .fastForward ? 10 : -10))
        case .next, .previous:
            return log("\(speaker.device.displayName): \(button.rawValue) pressed; one URL has no other track")
        }
        routingManager.playbackStateChanged(session: speaker.session)
    }
}
