import A2DP
import Foundation
import MediaDevice
import PCMPlayback

/// What plays: app sample streams (the app writes PCM into a ring, we send SBC), and URLs played
/// here by the local player (a Bluetooth device cannot fetch a URL).
extension BluetoothDriver {
    func startRealtimeSampleDelivery(session: MediaOutputSession) {
        guard let speaker = speakers[session.id] else { return }
        for stream in routingManager.realtimeSampleStreams(for: session) where speaker.streamSenders[stream.identifier] == nil {
            guard stream.format.isAudio else {
                routingManager.sampleStreamFailed(stream, error: MediaDeviceError(.unsupported, "\(speaker.device.displayName) takes audio only, not video"))
                continue
            }
            Task {
                do {
                    let link = try await speaker.acquire()
                    guard stream.isOpen, self.speakers[session.id] === speaker else { return speaker.releaseIfIdle() }
                    let source = try RingPCMSource(stream: stream, format: link.configuration.pcmFormat)
                    let routingManager = self.routingManager
                    let sender = try A2DPSender(source: source, configuration: link.configuration, transport: link.fd, writeMTU: link.writeMTU) { end in
                        if case .failed(let why) = end { routingManager.sampleStreamFailed(stream, error: MediaDeviceError(.sessionFailed, "\(why)")) }
                    }
                    speaker.add(sender, stream: stream.identifier)
                    sender.start()
                    self.blueZ.setPlayerStatus("playing")
                } catch {
                    speaker.releaseIfIdle()
                    self.routingManager.sampleStreamFailed(stream, error: error)
                }
            }
        }
    }

    /// The device's own delay (BlueZ's `Delay`, from A2DP delay reporting) and what the sender
    /// holds before sending: one packet's worth of audio, and its lead.
    func outputLatency(for stream: RealtimeSampleStream) -> Double? {
        guard let speaker = speakers[stream.session.id], let configuration = speaker.configuration else { return nil }
        let packet = Double(speaker.samplesPerPacket) / Double(configuration.sampleRate)
        let lead = Double(A2DPSender.defaultLead.components.attoseconds) / 1e18
        return (speaker.deviceDelay ?? 0) + packet + lead
    }

    func stopRealtimeSampleDelivery(session: MediaOutputSession) {
        guard let speaker = speakers[session.id] else { return }
        let open = Set(routingManager.realtimeSampleStreams(for: session).map(\.identifier))
        for id in speaker.streamSenders.keys where !open.contains(id) { speaker.removeSender(stream: id) }
    }

    func startSession(_ session: MediaOutputSession, identifier: String?, url: URL) {
        guard let speaker = speakers[session.id] else {
            return routingManager.sessionFailed(session, error: MediaDeviceError(.sessionFailed, "\(session) is not an active route of this driver"))
        }
        Task {
            do {
                guard let format = speaker.configuration?.pcmFormat else {
                    throw MediaDeviceError(.sessionFailed, "\(speaker.device.displayName) has no audio link: it is not connected")
                }
                let player = try await LocalMediaPlayer.open(url: url, format: format)
                let link = try await speaker.acquire()
                guard self.speakers[session.id] === speaker else { return player.stop() }
                let routingManager = self.routingManager
                let sender = try A2DPSender(source: SessionPCMSource(player), configuration: link.configuration, transport: link.fd, writeMTU: link.writeMTU) { end in
                    if case .failed(let why) = end { routingManager.sessionFailed(session, error: MediaDeviceError(.sessionFailed, "\(why)")) }
                }
                let playback = LocalPlayback(player: player, output: speaker) { [weak self] in
                    guard let self, let playback = speaker.playback else { return }
                    self.blueZ.setPlayerStatus(playback.isPlaying ? "playing" : "paused")
                    self.routingManager.playbackStateChanged(session: session)
                }
                speaker.playback?.player.stop()
                speaker.playback = playback
                speaker.setURLSender(sender)
                speaker.isPaused = false
                sender.start()
                self.blueZ.setPlayerStatus("playing")
                self.routingManager.started(application: identifier, playbackControl: playback, session: session)
            } catch {
                self.routingManager.sessionFailed(session, error: error)
            }
        }
    }

    func stopSession(_ session: MediaOutputSession) {
        guard let speaker = speakers[session.id], let playback = speaker.playback else { return }
        playback.player.stop()
        speaker.playback = nil
        speaker.setURLSender(nil)
        blueZ.setPlayerStatus("stopped")
    }

    /// Bluetooth audio devices run no applications: data from apps has nowhere to go.
    func sendData(_ data: Data, toApplication applicationIdentifier: String, session: MediaOutputSession) {
        log("dropping \(data.count) bytes for \(applicationIdentifier): Bluetooth devices run no applications")
    }
}
