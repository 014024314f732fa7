import DBus
import MediaRouteIPC

/// What one MPRIS player shows the desktop, whatever plays behind it (a route's session, a remote
/// media session): the item, where playback stands, and what the player's buttons can do now.
/// Rendered as D-Bus values here, and compared with the last one shown to say what changed.
struct MPRISItem: Sendable, Equatable {
    enum Status: String, Sendable {
        case playing = "Playing", paused = "Paused", stopped = "Stopped"
    }

    /// The player's name in the desktop's controls (MPRIS `Identity`): the device's or the app's.
    var identity: String
    var title: String
    var artists: [String] = []
    var album: String?
    /// The artwork as a URL the desktop can read, a `file://` one for art given as a file.
    var artURL: String?
    var url: String?
    /// Seconds; nil while unknown (a live stream, or not said yet).
    var length: Double?
    var status = Status.stopped
    /// Seconds from the start, at `capturedAt`; while playing it moves on at `rate`.
    var position = 0.0
    var capturedAt = ContinuousClock.now
    var rate = 1.0
    /// From 0 to 1; nil without a volume control (Volume then reads 1 and cannot be set).
    var volume: Double?
    var canPlay = true
    var canPause = true
    var canGoNext = false
    var canGoPrevious = false
    var canSeek = false
    /// False: nothing about the player can be controlled (MPRIS then has every other Can* false too).
    var canControl = true
    /// Names the item playing: another key is another track (a new `mpris:trackid`).
    var trackKey = ""

    /// The rates a player offers when its rate can be set (MinimumRate, MaximumRate).
    static let settableRates = 0.5...2.0

    /// Where playback stands at `instant`: on from the captured position at `rate` while playing,
    /// never past the end when the length is known.
    func position(at instant: ContinuousClock.Instant) -> Double {
        guard status == .playing else { return position }
        let moved = position + max(0, (instant - capturedAt).seconds) * rate
        return length.map { min(moved, $0) } ?? moved
    }

    /// A position that did not follow from playing on since this one was captured: a seek.
    func jumped(to newer: MPRISItem) -> Bool {
        abs(newer.position - position(at: newer.capturedAt)) > 1.5
    }

    /// Seconds as MPRIS's microseconds; what a driver or an app reports is not trusted to fit (a
    /// lying one must not crash the supervisor): negative or not finite is 0, and beyond a million
    /// hours stops there.
    static func microseconds(_ seconds: Double) -> Int64 {
        guard seconds.isFinite, seconds > 0 else { return 0 }
        return Int64((min(seconds, 3.6e9) * 1_000_000).rounded())
    }

    /// Title, artists, album, art, length and URL, with the track's id.
    func metadata(track: DBusObjectPath) -> DBusValue {
        var members: [String: DBusValue] = ["mpris:trackid": .objectPath(track), "xesam:title": .string(title)]
        if !artists.isEmpty { members["xesam:artist"] = .array("s", artists.map(DBusValue.string)) }
        if let album { members["xesam:album"] = .string(album) }
        if let artURL { members["mpris:artUrl"] = .string(artURL) }
        if let url { members["xesam:url"] = .string(url) }
        if let length, Self.microseconds(length) > 0 { members["mpris:length"] = .int64(Self.microseconds(length)) }
        return .properties(members)
    }

    /// The Player properties that are signalled when they change, as shown with `track`'s id.
    /// Position is not (clients ask, and a jump is signalled by Seeked), nor is CanControl (MPRIS
    /// says it is not signalled).
    func signalled(track: DBusObjectPath, rates: ClosedRange<Double>) -> [String: DBusValue] {
        ["PlaybackStatus": .string(status.rawValue), "Metadata": metadata(track: track), "Volume": .double(volume ?? 1), "Rate": .double(rate),
         "MinimumRate": .double(rates.lowerBound), "MaximumRate": .double(rates.upperBound),
         "CanPlay": .boolean(canPlay), "CanPause": .boolean(canPause), "CanGoNext": .boolean(canGoNext),
         "CanGoPrevious": .boolean(canGoPrevious), "CanSeek": .boolean(canSeek)]
    }
}
