import DBus
import Foundation
import MediaRouteWire

/// What one route's media session shows the desktop through MPRIS, as D-Bus values: built from the
/// route and its playback state, compared with the last one shown to say what changed.
struct MPRISState: Equatable {
    var route: RouteDescription
    /// The session's playback, newer than the route's when a state came on its own.
    var playback: SessionPlayback?

    init(route: RouteDescription, playback: SessionPlayback? = nil) {
        self.route = route
        self.playback = playback ?? route.playback
    }

    var status: PlaybackStatus { playback?.status ?? PlaybackStatus() }

    /// The object path naming the track: the session's, so a `SetPosition` for an older one is ignored.
    var trackID: DBusObjectPath { DBusObjectPath("/org/mediaroute/session/" + MPRISState.pathElement(route.session)) }

    /// `Playing`, `Paused` or `Stopped`, as MPRIS spells them.
    var playbackStatus: String {
        if status.isPlaying { return "Playing" }
        return status.state == .paused ? "Paused" : "Stopped"
    }

    /// The position in microseconds, MPRIS's unit.
    var position: Int64 { Int64((status.position * 1_000_000).rounded()) }

    var volume: Double { Double(route.volume ?? status.volume) }

    var canSeek: Bool { status.timeRange != nil }

    /// Title (the URL's last part when the device says none), artist, album, art, length and URL.
    var metadata: DBusValue {
        let meta = status.metadata
        var members: [String: DBusValue] = ["mpris:trackid": .objectPath(trackID)]
        let fallback = route.url.flatMap { $0.split(separator: "/").last.map(String.init)?.removingPercentEncoding } ?? route.device.displayName
        members["xesam:title"] = .string(meta.title ?? fallback)
        if let artist = meta.artist { members["xesam:artist"] = .array("s", [.string(artist)]) }
        if let album = meta.album { members["xesam:album"] = .string(album) }
        if let art = meta.artworkURL { members["mpris:artUrl"] = .string(art) }
        if let url = route.url { members["xesam:url"] = .string(url) }
        if let range = status.timeRange, range.upperBound > 0 { members["mpris:length"] = .int64(Int64((range.upperBound * 1_000_000).rounded())) }
        return .properties(members)
    }

    /// The Player properties that are signalled when they change (Position is not: clients ask, and
    /// a jump is signalled by Seeked).
    var signalled: [String: DBusValue] {
        ["PlaybackStatus": .string(playbackStatus), "Metadata": metadata, "Volume": .double(volume), "Rate": .double(Double(status.speed)),
         "CanSeek": .boolean(canSeek)]
    }

    /// What `newer` shows differently from this.
    func changes(to newer: MPRISState) -> [String: DBusValue] {
        let before = signalled
        return newer.signalled.filter { before[$0.key] != $0.value }
    }

    /// A position that did not follow from playing on since the last one: a seek.
    func jumped(to newer: MPRISState, elapsed: Double) -> Bool {
        let expected = status.position + (status.isPlaying ? elapsed * Double(status.speed) : 0)
        return route.session == newer.route.session && abs(newer.status.position - expected) > 1.5
    }

    /// A D-Bus name or path element from any text: letters, digits and `_` only, not led by a digit.
    static func pathElement(_ text: String) -> String {
        let kept = String(text.unicodeScalars.map { scalar -> Character in
            (scalar.isASCII && (CharacterSet.alphanumerics.contains(scalar) || scalar == "_")) ? Character(scalar) : "_"
        })
        return kept.first.map { $0.isNumber ? "_" + kept : kept } ?? "_"
    }
}
