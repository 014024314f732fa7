import Foundation
import MediaDevice
import PCMPlayback
import UPnP

/// Apps' live audio: served to the renderer as an endless HTTP stream of PCM, which it is told to
/// play like any URL.
extension DLNADriver {
    func startRealtimeSampleDelivery(session: MediaOutputSession) {
        guard let active = active[session.id] else { return }
        for stream in routingManager.realtimeSampleStreams(for: session) where active.streamPaths[stream.identifier] == nil {
            guard stream.format.isAudio else {
                routingManager.sampleStreamFailed(stream, error: MediaDeviceError(.unsupported, "\(active.name) is sent audio only; video streams go to receivers that take them"))
                continue
            }
            do {
                let live = try Self.liveStream(for: stream, formats: active.renderer.formats, renderer: active.name)
                let path = active.endpoint.media.publish(stream: live.mimeType, for: active.renderer.address) { live.makeBody() }
                guard let url = active.endpoint.url(path) else { throw MediaDeviceError(.sessionFailed, "cannot make a URL for the live stream") }
                active.streamPaths[stream.identifier] = path
                active.liveStreams[stream.identifier] = live
                let format = active.renderer.formats.accepting(live.mimeType) ?? ProtocolInfo(contentFormat: live.mimeType)
                let metadata = DIDLLite.item(title: "Live audio", url: url.absoluteString, protocolInfo: format, mimeType: live.mimeType)
                Task {
                    do {
                        try await active.play(url: url.absoluteString, metadata: metadata)
                    } catch {
                        self.routingManager.sampleStreamFailed(stream, error: MediaDeviceError(.sessionFailed, "\(error)"))
                    }
                }
            } catch {
                routingManager.sampleStreamFailed(stream, error: error)
            }
        }
    }

    /// LPCM at the rate and channels the renderer lists for it, else WAV at 48 kHz stereo.
    static func liveStream(for stream: RealtimeSampleStream, formats: [ProtocolInfo], renderer: String) throws -> LivePCMStream {
        if let lpcm = formats.accepting("audio/L16") {
            let format = PCMFormat(sampleRate: lpcm.parameter("rate").flatMap { Int($0) } ?? 44_100, channels: lpcm.parameter("channels").flatMap { Int($0) } ?? 2)
            let mimeType = lpcm.contentFormat.contains("*") || lpcm.parameter("rate") == nil
                ? "audio/L16;rate=\(format.sampleRate);channels=\(format.channels)" : lpcm.contentFormat
            return try LivePCMStream(stream: stream, format: format, encoding: .l16, mimeType: mimeType)
        }
        if let wav = formats.accepting("audio/wav") {
            return try LivePCMStream(stream: stream, format: PCMFormat(sampleRate: 48_000, channels: 2), encoding: .wav, mimeType: wav.announcing("audio/wav"))
        }
        throw MediaDeviceError(.unsupported, "\(renderer) takes neither LPCM (audio/L16) nor WAV, the formats live audio is sent in")
    }

    func stopRealtimeSampleDelivery(session: MediaOutputSession) {
        guard let active = active[session.id] else { return }
        let open = Set(routingManager.realtimeSampleStreams(for: session).map(\.identifier))
        for (id, path) in active.streamPaths where !open.contains(id) {
            active.endpoint.media.unpublish(path)
            active.streamPaths[id] = nil
            active.liveStreams[id] = nil
        }
        if active.streamPaths.isEmpty, active.playback == nil {
            Task { try? await active.stop() }
        }
    }

    /// What the renderer holds before it plays: audio it fetched from us that its position has
    /// not reached yet (measured, not assumed: renderers buffer from under a second to several).
    func outputLatency(for stream: RealtimeSampleStream) -> Double? {
        guard let active = active[stream.session.id], let live = active.liveStreams[stream.identifier], active.transportState == "PLAYING" else { return nil }
        let held = live.servedSeconds - active.currentPosition
        return held > 0 ? held : nil
    }
}
