extension MPRISPlayer {
    /// Where a player's buttons go: a route's playback control (through the supervisor, as if the
    /// operator asked) or a remote media session's command closures. A command left nil is one
    /// this kind of session never has: calling it is answered `NotSupported` with a sentence, and
    /// its Can* reads false. A command the session has but has not enabled now (the item's Can*
    /// false) does nothing, as MPRIS asks (PlayPause and Stop, where MPRIS asks for an error,
    /// answer `NotSupported`). What a command throws reaches the caller as its sentence.
    struct Commands: Sendable {
        var play: (@Sendable () async throws -> Void)?
        var pause: (@Sendable () async throws -> Void)?
        /// Nil: play or pause, from the status shown.
        var playPause: (@Sendable () async throws -> Void)?
        var stop: (@Sendable () async throws -> Void)?
        var next: (@Sendable () async throws -> Void)?
        var previous: (@Sendable () async throws -> Void)?
        /// To a position in seconds from the start.
        var seek: (@Sendable (Double) async throws -> Void)?
        /// To a level from 0 to 1.
        var setVolume: (@Sendable (Double) async throws -> Void)?
        /// To a rate within `MPRISItem.settableRates` (Rate 0 is Pause, as MPRIS has it). Nil: the
        /// rate is the item's, and MinimumRate and MaximumRate say it cannot change.
        var setRate: (@Sendable (Double) async throws -> Void)?

        init(play: (@Sendable () async throws -> Void)? = nil, pause: (@Sendable () async throws -> Void)? = nil,
             playPause: (@Sendable () async throws -> Void)? = nil, stop: (@Sendable () async throws -> Void)? = nil,
             next: (@Sendable () async throws -> Void)? = nil, previous: (@Sendable () async throws -> Void)? = nil,
             seek: (@Sendable (Double) async throws -> Void)? = nil, setVolume: (@Sendable (Double) async throws -> Void)? = nil,
             setRate: (@Sendable (Double) async throws -> Void)? = nil) {
            (self.play, self.pause, self.playPause, self.stop) = (play, pause, playPause, stop)
            (self.next, self.previous, self.seek, self.setVolume, self.setRate) = (next, previous, seek, setVolume, setRate)
        }

        /// `item` as its player shows it: each Can* true only where the command exists too, and
        /// none without control.
        func limiting(_ item: MPRISItem) -> MPRISItem {
            var shown = item
            let control = item.canControl
            shown.canPlay = control && item.canPlay && play != nil
            shown.canPause = control && item.canPause && pause != nil
            shown.canGoNext = control && item.canGoNext && next != nil
            shown.canGoPrevious = control && item.canGoPrevious && previous != nil
            shown.canSeek = control && item.canSeek && seek != nil
            return shown
        }

        /// MinimumRate and MaximumRate for `item`: the settable ones, or only its own rate (and 1).
        func rates(for item: MPRISItem) -> ClosedRange<Double> {
            setRate != nil && item.canControl ? MPRISItem.settableRates : min(1, item.rate)...max(1, item.rate)
        }
    }
}
