import DBus
import Foundation
import MediaRouteWire

/// One route's media session as the desktop is shown it: the route, its playback state and when
/// that state came, made into the `MPRISItem` its player shows.
struct MPRISState: Equatable {
    var route: RouteDescription
    /// The session's playback, newer than the route's when a state came on its own.
    var playback: SessionPlayback?
    /// When `playback` came: where its position was captured.
    var receivedAt: ContinuousClock.Instant

    init(route: RouteDescription, playback: SessionPlayback? = nil, at instant: ContinuousClock.Instant = .now) {
        self.route = route
        self.playback = playback ?? route.playback
        receivedAt = instant
    }

    /// This session with a newer route description or state. A state older than the one shown (a
    /// route description and a state may cross) does not replace it, nor the time it came.
    func taking(_ route: RouteDescription, playback: SessionPlayback? = nil, at instant: ContinuousClock.Instant = .now) -> MPRISState {
        var chosen = playback ?? route.playback
        if let current = self.playback, (chosen?.revision ?? .min) < current.revision { chosen = current }
        return MPRISState(route: route, playback: chosen, at: chosen == self.playback ? receivedAt : instant)
    }

    var status: PlaybackStatus { playback?.status ?? PlaybackStatus() }

    /// Where the session's track ids are (a URL on the route is a track: `<base>/<n>` for the n-th).
    var trackBase: DBusObjectPath { DBusObjectPath("/org/mediaroute/session/\(Self.pathElement(route.session))") }

    /// What the player shows: the device's title (the URL's last part when it says none), the
    /// device's volume, seeking where the length is known; a route plays one item, so no next or
    /// previous.
    var item: MPRISItem {
        let meta = status.metadata
        let fallback = route.url.flatMap { $0.split(separator: "/").last.map(String.init)?.removingPercentEncoding } ?? route.device.displayName
        let speed = Double(status.speed)
        var item = MPRISItem(identity: route.device.displayName, title: meta.title ?? fallback)
        item.artists = meta.artist.map { [$0] } ?? []
        item.album = meta.album
        item.artURL = meta.artworkURL
        item.url = route.url
        item.length = status.timeRange?.upperBound
        item.status = status.isPlaying ? .playing : status.state == .paused ? .paused : .stopped
        item.position = status.position.isFinite ? status.position : 0
        item.capturedAt = receivedAt
        item.rate = speed > 0 ? min(max(speed, MPRISItem.settableRates.lowerBound), MPRISItem.settableRates.upperBound) : 1
        item.volume = Double(route.volume ?? status.volume)
        item.canSeek = status.timeRange != nil
        item.trackKey = route.url ?? ""
        return item
    }

    /// A D-Bus name or path element from any text: letters, digits and `_` only, not led by a digit.
    static func pathElement(_ text: String) -> String {
        let kept = String(text.unicodeScalars.map { scalar -> Character in
            (scalar.isASCII && (CharacterSet.alphanumerics.contains(scalar) || scalar == "_")) ? Character(scalar) : "_"
        })
        return kept.first.map { $0.isNumber ? "_" + kept : kept } ?? "_"
    }
}
