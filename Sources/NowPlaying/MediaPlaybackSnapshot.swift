import Foundation

/// Whether a session plays, and where it was at a moment: the system moves the position on from
/// `elapsedTime` at `timestamp` at the playing rate, so a session need not report every second.
/// A playing rate should be finite and not 0, and `defaultPlaybackRate` above 0: where they are
/// not, the desktop is shown the default rate (or 1) instead, rather than the extension trapping.
public struct MediaPlaybackSnapshot: Equatable, Sendable {
    public enum PlaybackState: Equatable, Sendable {
        case buffering
        case interrupted
        case paused
        /// `rate` is how fast content advances now (5 while fast-forwarding); finite, not 0.
        case playing(rate: Float = 1.0)
        /// Nothing loaded, or playback over.
        case stopped
    }

    public let state: PlaybackState
    public let defaultPlaybackRate: Float
    public let elapsedTime: TimeInterval?
    public let timestamp: Date?

    public init(state: PlaybackState, defaultPlaybackRate: Float = 1.0, elapsedTime: TimeInterval? = nil, timestamp: Date? = nil) {
        self.state = state
        self.defaultPlaybackRate = defaultPlaybackRate
        self.elapsedTime = elapsedTime
        self.timestamp = timestamp
    }
}
