import MediaRouteIPC

/// When a state file may be written: at once after a quiet spell, else once when `interval` since
/// the last write ends (whatever changed meanwhile goes out together), so a burst of changes costs
/// one write per interval and a single change is on disk before the answer to it.
final class WritePacing {
    let interval: Duration
    private(set) var lastWrite: ContinuousClock.Instant?
    /// Set while a write is scheduled.
    var scheduled: EventLoop.TimerHandle?

    init(interval: Duration) { self.interval = interval }

    /// How long to wait before writing; zero: write now.
    func wait(now: ContinuousClock.Instant = .now) -> Duration {
        lastWrite.map { max(.zero, $0 + interval - now) } ?? .zero
    }

    func wrote(at now: ContinuousClock.Instant = .now) { lastWrite = now }
}
