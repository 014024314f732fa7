import Glibc

/// The null output: takes samples at the pace a sound card would (by the monotonic clock) and
/// discards them, so that everything before it runs as it would in front of a real card.
public final class ClockPacedSink: SoundSink {
    public let sampleRate: Int
    public let channels: Int
    public var delay: Duration { .zero }
    public var deviceUnderruns: Int { 0 }
    /// When the frames written so far would have been played out.
    private var due: timespec?

    public init(sampleRate: Int, channels: Int) {
        self.sampleRate = sampleRate
        self.channels = channels
    }

    public func write(_ samples: UnsafeBufferPointer<Float>) throws(SoundOutputError) {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        // A caller that fell behind by more than a write (it was not there to write) starts a new pace.
        var next = due.map { Self.nanoseconds($0) >= Self.nanoseconds(now) - 20_000_000 ? $0 : now } ?? now
        let frames = samples.count / channels
        let total = Int64(next.tv_nsec) + Int64(frames) * 1_000_000_000 / Int64(sampleRate)
        next.tv_sec += Int(total / 1_000_000_000)
        next.tv_nsec = Int(total % 1_000_000_000)
        due = next
        // The card's clock: return when these frames would have been taken.
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, nil) == EINTR {}
    }

    public func close(draining: Bool) {}

    private static func nanoseconds(_ time: timespec) -> Int64 { Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec) }
}
