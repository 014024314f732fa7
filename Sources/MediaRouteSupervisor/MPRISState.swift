import DBus
import Foundation
import MediaRouteWire

/// What one route's media session shows the desktop through MPRIS, as D-Bus values: built from the
/// route and its playback state, compared with the last one shown to say what changed.
struct MPRISState: Equatable {
    var route: RouteDescription
    /// The session's playback, newer than the route's when a state came on its own.
    var playback: SessionPlayback?

    /// How many times the URL on the route changed: each is another track for MPRIS.
    var track = 0

    /// The rates advertised (MinimumRate, MaximumRate); a device's own are kept within them.
    static let rates = 0.5...2.0

    init(route: RouteDescription, playback: SessionPlayback? = nil) {
        self.route = route
        self.playback = playback ?? route.playback
    }

    var status: PlaybackStatus { playback?.status ?? PlaybackStatus() }

    /// The object path naming the track: the session's, so a `SetPosition` for an older one is ignored.
    var trackID: DBusObjectPath { DBusObjectPath("/org/mediaroute/session/\(MPRISState.pathElement(route.session))/\(track)") }

    var rate: Double { status.speed > 0 ? min(max(Double(status.speed), Self.rates.lowerBound), Self.rates.upperBound) : 1 }

    /// `Playing`, `Paused` or `Stopped`, as MPRIS spells them.
    var playbackStatus: String {
        if status.isPlaying { return "Playing" }
        return status.state == .paused ? "Paused" : "Stopped"
    }

    /// The position in microseconds, MPRIS's unit.
    var position: Int64 { Self.microseconds(status.position) }

    /// Seconds as MPRIS's microseconds; what a driver reports is not trusted to fit (a lying one
    /// must not crash the supervisor): negative or not finite is 0, and beyond a million hours stops there.
    static func microseconds(_ seconds: Double) -> Int64 {
        guard seconds.isFinite, seconds > 0 else { return 0 }
        return Int64((min(seconds, 3.6e9) * 1_000_000).rounded())
    }

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
        if let range = status.timeRange, Self.microseconds(range.upperBound) > 0 { members["mpris:length"] = .int64(Self.microseconds(range.upperBound)) }
        return .properties(members)
    }

    /// The Player properties that are signalled when they change (Position is not: clients ask, and
    /// a jump is signalled by Seeked).
    var signalled: [String: DBusValue] {
        ["PlaybackStatus": .string(playbackStatus), "Metadata": metadata, "Volume": .double(volume), "Rate": .double(rate),
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
