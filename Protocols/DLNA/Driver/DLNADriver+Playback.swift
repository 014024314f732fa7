import Foundation
import MediaDevice
import PCMPlayback
import UPnP

/// What plays: URLs the renderer fetches itself, the controller's files served to it, and apps'
/// live audio as an endless LPCM or WAV stream.
extension DLNADriver {
    func startSession(_ session: MediaOutputSession, identifier: String?, url: URL) {
        guard let active = active[session.id] else {
            return routingManager.sessionFailed(session, error: MediaDeviceError(.sessionFailed, "\(session) is not an active route of this driver"))
        }
        // Begun at once: for a URL that needs no look-up, the renderer's requests go out before
        // the supervisor's is answered.
        Task.immediate {
            // Connecting to the renderer while the URL is looked at and its metadata made.
            let connection = active.connectionForPlay()
            do {
                defer { connection?.close() }
                let (location, mimeType, servedPath, unasked) = try await resolve(url, for: active)
                guard let format = active.renderer.formats.accepting(mimeType) else {
                    let takes = Set(active.renderer.formats.map { $0.contentFormat.split(separator: ";")[0] }).sorted().prefix(12).joined(separator: ", ")
                    throw MediaDeviceError(.unsupported, "\(active.name) cannot play \(mimeType) (\(url.lastPathComponent)); it takes \(takes). MediaRoute does not transcode for renderers")
                }
                let title = url.deletingPathExtension().lastPathComponent
                let metadata = DIDLLite.item(title: title, url: location, protocolInfo: format, mimeType: format.announcing(mimeType))
                // The new URI replaces what played (a Stop sent now could land after the Play).
                unpublishMedia(of: active)
                let playback = RendererPlayback(renderer: active, url: location, metadata: metadata, title: title)
                active.playback = playback
                active.mediaPath = servedPath
                do {
                    try await active.play(url: location, metadata: metadata, over: connection)
                } catch {
                    // A renderer that fetched a missing URL says so in its own words (714
                    // "Illegal MIME-type"); the server's answer is the one that helps.
                    if unasked, let problem = await refusal(of: url, to: active) { throw problem }
                    throw error
                }
                // A renderer that plays the URL has fetched it: its server took the request.
                if unasked, active.transportState != "PLAYING", let problem = await refusal(of: url, to: active) {
                    await playback.stop()
                    if active.playback === playback { active.playback = nil }
                    throw problem
                }
                routingManager.started(application: identifier, playbackControl: playback, session: session)
            } catch let error as UPnPError {
                routingManager.sessionFailed(session, error: MediaDeviceError(.sessionFailed, error.description))
            } catch {
                routingManager.sessionFailed(session, error: error)
            }
        }
    }

    /// Where the renderer fetches `url`, and its type: HTTP URLs as they are (their type from the
    /// server), files served by us to that renderer only. A URL whose name tells a type the
    /// renderer takes goes to it at once, `unasked`: its server is asked (`refusal`) only if the
    /// renderer does not play it at once. Asking in parallel cost the renderer's start ~0.4 ms
    /// on a small machine (the server's work beside the renderer's).
    private func resolve(_ url: URL, for active: ActiveRenderer) async throws
        -> (location: String, mimeType: String, servedPath: String?, unasked: Bool) {
        switch url.scheme?.lowercased() {
        case "http", "https":
            if let named = MediaType.of(url), active.renderer.formats.accepting(named) != nil {
                return (url.absoluteString, named, nil, true)
            }
            let mimeType = try await served(url, to: active) ?? MediaType.of(url)
            guard let mimeType else { throw MediaDeviceError(.unsupported, "cannot tell what kind of media \(url.absoluteString) is (no Content-Type, no known extension)") }
            return (url.absoluteString, mimeType, nil, false)
        case "file":
            let path = url.path
            var status = stat()
            guard stat(path, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
                throw MediaDeviceError(.sessionFailed, "\(path) is not a file that can be read")
            }
            guard access(path, R_OK) == 0 else { throw MediaDeviceError(.sessionFailed, "\(path) cannot be read: permission denied") }
            guard let mimeType = MediaType.of(url) else { throw MediaDeviceError(.unsupported, "cannot tell what kind of media \(path) is from its extension") }
            // Served under the renderer's own spelling of the type (audio/x-wav for audio/wav, ...).
            let announced = active.renderer.formats.accepting(mimeType)?.announcing(mimeType) ?? mimeType
            let served = active.endpoint.media.publish(file: path, mimeType: announced, for: active.renderer.address)
            guard let location = active.endpoint.url(served) else { throw MediaDeviceError(.sessionFailed, "cannot make a URL for \(path)") }
            return (location.absoluteString, mimeType, served, false)
        default:
            throw MediaDeviceError(.unsupported, "\(url.absoluteString): renderers fetch http:// URLs, and files are served to them; \(url.scheme ?? "this") URLs cannot be played")
        }
    }

    /// The server's refusal of `url`, if it refuses it.
    private func refusal(of url: URL, to active: ActiveRenderer) async -> MediaDeviceError? {
        do throws(MediaDeviceError) { _ = try await served(url, to: active) } catch { return error }
        return nil
    }

    /// Asks the server for `url` (HEAD): its type, if it says one; an error if it refuses. One we
    /// cannot reach may still be reachable from the renderer (another network), so that is logged only.
    private func served(_ url: URL, to active: ActiveRenderer) async throws(MediaDeviceError) -> String? {
        let head: HTTPClientResponse
        do {
            head = try await client.send(.HEAD, url, timeout: .seconds(3), maximumBodyLength: 0)
        } catch {
            log("\(active.name): could not look at \(url.absoluteString) (\(error)); handing it to the renderer as it is")
            return nil
        }
        guard head.status.code < 400 else {
            throw MediaDeviceError(.sessionFailed, "\(url.absoluteString) answered HTTP \(head.status.code) \(head.status.reasonPhrase): the renderer could not fetch it either")
        }
        guard let type = head.headers.first(name: "Content-Type")?.split(separator: ";").first, type != "application/octet-stream" else { return nil }
        return String(type).trimmingCharacters(in: .whitespaces)
    }

    func stopSession(_ session: MediaOutputSession) {
        guard let active = active[session.id], let playback = active.playback else { return }
        active.playback = nil
        unpublishMedia(of: active)
        Task { await playback.stop() }
    }

    /// Renderers run no applications of ours: data from apps has nowhere to go.
    func sendData(_ data: Data, toApplication applicationIdentifier: String, session: MediaOutputSession) {
        log("dropping \(data.count) bytes for \(applicationIdentifier): UPnP renderers run no applications")
    }

    func unpublishMedia(of active: ActiveRenderer) {
        if let path = active.mediaPath { active.endpoint.media.unpublish(path) }
        active.mediaPath = nil
    }

    func unpublish(_ active: ActiveRenderer) {
        unpublishMedia(of: active)
        for path in active.streamPaths.values { active.endpoint.media.unpublish(path) }
        active.streamPaths = [:]
    }
}
