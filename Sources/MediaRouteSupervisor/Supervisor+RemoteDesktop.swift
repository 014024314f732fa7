import Foundation
import MediaDevice

/// Remote media sessions on the desktop: each one's state as an MPRIS item, and the player's
/// buttons as commands to its extension.
extension Supervisor {
    func showOnDesktop(_ entry: RemoteSessionTable.Entry) {
        guard let mpris, let state = entry.state else { return }
        mpris.show(remote: entry.key, MPRISItem(remote: entry, state, now: Date().timeIntervalSince1970), commands: remoteCommands(entry.key, state))
    }

    /// The buttons a session has (the commands it names, enabled or not: MPRIS greys the rest).
    private func remoteCommands(_ key: String, _ state: RemoteSessionState) -> MPRISPlayer.Commands {
        let weak = WeakSupervisor(self)
        @Sendable func command(_ command: ToExtension.Command) async throws {
            try await weak.supervisor?.remoteCommand(key, command)
        }
        @Sendable func send(_ kind: ToExtension.Command.Kind) -> @Sendable () async throws -> Void {
            { try await command(ToExtension.Command(session: key, command: kind)) }
        }
        let volumeDevice = state.devices.first { $0.volumeControl == .absolute }?.id
        return MPRISPlayer.Commands(
            play: send(.play), pause: send(.pause),
            playPause: state.enables(.togglePlayPause) ? send(.togglePlayPause) : nil,
            stop: send(.stop), next: send(.next), previous: send(.previous),
            seek: { seconds in try await command(ToExtension.Command(session: key, command: .seekToPosition, position: seconds)) },
            setVolume: volumeDevice.map { device in
                { @Sendable level in try await command(ToExtension.Command(session: key, command: .setVolume, device: device, volume: level)) }
            })
    }
}

extension MPRISItem {
    /// A remote session as its player shows it; `now` in seconds since 1970, the clock of the
    /// session's timestamps.
    init(remote entry: RemoteSessionTable.Entry, _ state: RemoteSessionState, now: Double) {
        let content = state.content, playback = state.playback
        self.init(identity: state.devices.first?.name ?? entry.application, title: content?.title ?? entry.id)
        artists = content?.artist.map { [$0] } ?? []
        album = content?.album
        artURL = entry.artwork.flatMap { $0.file.isEmpty ? nil : URL(fileURLWithPath: $0.file).absoluteString }
        length = content?.duration
        status = switch playback?.state {
        case .playing?: .playing
        case .paused?, .buffering?, .interrupted?: .paused
        case .stopped?, nil: .stopped
        }
        position = max(0, playback?.position(at: now) ?? 0)
        rate = playback.map { $0.state == .playing && $0.rate > 0 ? $0.rate : $0.defaultRate } ?? 1
        volume = state.devices.first { $0.volumeControl == .absolute }?.volume
        canPlay = state.enables(.play)
        canPause = state.enables(.pause)
        canGoNext = state.enables(.next)
        canGoPrevious = state.enables(.previous)
        canSeek = state.enables(.seekToPosition) && content?.duration != nil
        trackKey = content?.id ?? ""
    }
}
