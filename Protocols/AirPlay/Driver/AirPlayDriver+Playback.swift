import Foundation
import MediaDevice
import PCMPlayback
import RAOP

/// What plays: an app's sample stream (any rate, resampled to AirPlay's 44.1 kHz with libsoxr),
/// or a URL played here by the local player (a receiver cannot fetch one). One at a time per
/// receiver, the newest replacing what played. And the volume, AirPlay's one per receiver.
extension AirPlayDriver {
    /// What RAOP carries: Apple Lossless frames of 44.1 kHz stereo.
    static let format = PCMFormat(sampleRate: ALACFrame.sampleRate, channels: ALACFrame.channels)

    func startRealtimeSampleDelivery(session: MediaOutputSession) {
        guard let receiver = active[session.id], let stream = routingManager.realtimeSampleStreams(for: session).last,
              receiver.streamID != stream.identifier else { return }
        guard stream.format.isAudio else {
            return routingManager.sampleStreamFailed(stream, error: MediaDeviceError(.unsupported, "\(receiver.device.displayName) takes audio only, not video"))
        }
        do {
            let source = try RingPCMSource(stream: stream, format: Self.format)
            Task { await receiver.play(source, stream: stream.identifier) }
        } catch {
            routingManager.sampleStreamFailed(stream, error: error)
        }
    }

    func stopRealtimeSampleDelivery(session: MediaOutputSession) {
        guard let receiver = active[session.id], let stream = receiver.streamID,
              !routingManager.realtimeSampleStreams(for: session).contains(where: { $0.identifier == stream }) else { return }
        Task { await receiver.stopPlaying() }
    }

    func startSession(_ session: MediaOutputSession, identifier: String?, url: URL) {
        guard let receiver = active[session.id] else {
            return routingManager.sessionFailed(session, error: MediaDeviceError(.sessionFailed, "\(session) is not an active route of this driver"))
        }
        Task {
            do {
                let player = try await LocalMediaPlayer.open(url: url, format: Self.format)
                guard active[session.id] === receiver else { return player.stop() }
                receiver.prepareToPlay()
                let playback = LocalPlayback(player: player, output: receiver) { [weak self] in
                    self?.routingManager.playbackStateChanged(session: session)
                }
                await receiver.play(SessionPCMSource(player), stream: nil, playback: playback)
                guard active[session.id] === receiver else { return await receiver.stopPlaying() }
                // What plays, for the receiver's display (and its MPRIS, for shairport-sync).
                let tags = player.metadata, title = tags.title ?? url.deletingPathExtension().lastPathComponent
                Task { [sender = receiver.sender] in try? await sender.setMetadata(title: title, artist: tags.artist, album: tags.album) }
                routingManager.started(application: identifier, playbackControl: playback, session: session)
            } catch {
                routingManager.sessionFailed(session, error: error)
            }
        }
    }

    func stopSession(_ session: MediaOutputSession) {
        guard let receiver = active[session.id], receiver.playback != nil else { return }
        Task { await receiver.stopPlaying() }
    }

    /// Receivers run no applications of ours: data from apps has nowhere to go.
    func sendData(_ data: Data, toApplication applicationIdentifier: String, session: MediaOutputSession) {
        log("dropping \(data.count) bytes for \(applicationIdentifier): AirPlay receivers run no applications")
    }

    private func receiver(for device: MediaOutputDevice) -> ActiveReceiver? { active.values.first { $0.device.id == device.id } }

    func setVolume(_ volume: Float, for device: MediaOutputDevice) { receiver(for: device)?.volume = volume }
    func volume(for device: MediaOutputDevice) -> Float { receiver(for: device)?.volume ?? memory[device.id].volume ?? 1 }
    /// Steps of 5 %.
    func changeVolume(by increments: Int, for device: MediaOutputDevice) {
        guard let receiver = receiver(for: device) else { return }
        receiver.volume += Float(increments) * 0.05
    }
    func muteDevice(_ device: MediaOutputDevice) { receiver(for: device)?.isMuted = true }
    func unmuteDevice(_ device: MediaOutputDevice) { receiver(for: device)?.isMuted = false }
    func isDeviceMuted(_ device: MediaOutputDevice) -> Bool { receiver(for: device)?.isMuted ?? false }
}
