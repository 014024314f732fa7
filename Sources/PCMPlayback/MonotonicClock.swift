import Glibc

/// CLOCK_MONOTONIC in nanoseconds: the clock that paced senders time their packets on, read
/// without the conversions of `ContinuousClock.Instant` on a path taken for every packet.
public enum MonotonicClock {
    public static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    /// Sleeps until `deadline` (nanoseconds on this clock); a signal's interruption ends it early.
    public static func sleep(until deadline: UInt64) {
        var until = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        _ = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, nil)
    }
}

extension Duration {
    /// Whole nanoseconds (saturating), for deadlines on CLOCK_MONOTONIC and the like.
    public var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : product &+ attoseconds / 1_000_000_000
    }
}
