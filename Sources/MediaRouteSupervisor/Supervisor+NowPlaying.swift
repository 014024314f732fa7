import Foundation
import MediaDevice

/// What plays where, for `mediaroute nowplaying`: every remote session, and every media session
/// on a route (a child route's included), as the desktop's media controls show them.
extension Supervisor {
    func nowPlaying() -> [Control.NowPlaying.Entry] {
        let now = Date().timeIntervalSince1970
        let remoteEntries = remote.entries.map { entry in
            let state = entry.state, content = state?.content
            return Control.NowPlaying.Entry(
                kind: .remote, application: entry.application, id: entry.id, title: content?.title, artist: content?.artist,
                status: state?.playback?.state.rawValue ?? "stopped", position: state?.playback?.position(at: now), duration: content?.duration,
                devices: state?.devices.map(\.name) ?? [], commands: state?.commands.map(\.rawValue) ?? [], systemPrimary: remote.primary == entry.key,
                pushToken: entry.pushToken, mprisName: mpris.map { _ in (remote.primary == entry.key ? MPRISBusName.stable : .remoteSession(entry.key)).rawValue })
        }
        let routeEntries = routes.all.compactMap { route -> Control.NowPlaying.Entry? in
            let shown = route.description
            guard let playback = shown.playback else { return nil }
            let status = playback.status
            return Control.NowPlaying.Entry(
                kind: .route, application: shown.application, id: shown.session, title: status.metadata.title ?? shown.url, artist: status.metadata.artist,
                status: status.isPlaying ? "playing" : status.state == .paused ? "paused" : "stopped", position: status.position,
                duration: status.timeRange?.upperBound, devices: [shown.device.displayName], commands: [], systemPrimary: false, pushToken: nil,
                mprisName: mpris.map { _ in MPRISBusName.routeSession(shown.session).rawValue })
        }
        return remoteEntries + routeEntries
    }
}
