import DACP
import MediaDevice

/// The receiver's own remote control (its buttons, an app on it, shairport-sync's D-Bus
/// interface): it finds our DACP server by the DACP-ID the session gave and sends its presses
/// there. They control a URL played here, reach the app whose samples play, or change the volume.
extension AirPlayDriver {
    /// Serves the remote of `receiver` for as long as it is active; without one, the route still
    /// plays (the log says why).
    func listen(to remote: DACPSession, of receiver: ActiveReceiver) async {
        do {
            receiver.remote = try await DACPServer.start(session: remote, avahi: browser.connection,
                                                         onRefused: { refusal in Task { @MainActor in receiver.remoteRefused(refusal) } }) { command in
                Task { @MainActor in self.pressed(command, on: receiver) }
            }
        } catch {
            log("\(receiver.device.displayName): its own remote control will not reach us: \(error)")
        }
    }

    func pressed(_ command: DACPCommand, on receiver: ActiveReceiver) {
        guard active[receiver.session.id] === receiver else { return }
        switch command {
        case .volumeUp: receiver.volume += 0.05
        case .volumeDown: receiver.volume -= 0.05
        case .muteToggle: receiver.isMuted.toggle()
        case .setVolume(let decibels): receiver.receiverSet(decibels: decibels)
        default: return playbackPressed(command, on: receiver)
        }
        routingManager.volumeChanged(for: receiver.device)
    }

    private func playbackPressed(_ command: DACPCommand, on receiver: ActiveReceiver) {
        if let playback = receiver.playback {
            switch command {
            case .play, .playResume: playback.isPlaying = true
            case .pause, .stop: playback.isPlaying = false
            case .playPause: playback.isPlaying.toggle()
            default: return log("\(receiver.device.displayName)'s remote: \(command) has nothing to do on one URL")
            }
            routingManager.playbackStateChanged(session: receiver.session)
        } else if receiver.streamID != nil {
            let forApp: MediaRemoteCommand? = switch command {
            case .play, .playResume: .play
            case .pause: .pause
            case .playPause: .togglePlayPause
            case .stop: .stop
            case .nextItem: .nextTrack
            case .previousItem: .previousTrack
            case .beginFastForward: .skipForward
            case .beginRewind: .skipBackward
            case .volumeUp, .volumeDown, .muteToggle, .setVolume: nil  // handled in `pressed`
            }
            guard let forApp else { return }
            routingManager.remoteCommand(forApp, session: receiver.session)
        }
    }
}
