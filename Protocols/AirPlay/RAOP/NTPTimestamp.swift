import Glibc

/// A 64-bit NTP time (seconds since 1900, 32.32 fixed point), as RAOP's timing and sync packets
/// carry it. The sender's replies and sync packets must use one clock: this one is the system's
/// real-time clock, read the same way everywhere.
public struct NTPTimestamp: Sendable, Equatable {
    public var seconds: UInt32
    public var fraction: UInt32

    public init(seconds: UInt32, fraction: UInt32) {
        self.seconds = seconds
        self.fraction = fraction
    }

    /// Seconds from 1900 to 1970.
    static let unixEpochOffset: UInt64 = 2_208_988_800

    public static func now() -> NTPTimestamp {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        let fraction = UInt64(time.tv_nsec) << 32 / 1_000_000_000
        return NTPTimestamp(seconds: UInt32(truncatingIfNeeded: UInt64(time.tv_sec) + unixEpochOffset), fraction: UInt32(fraction))
    }

    public var bytes: [UInt8] {
        var bytes: [UInt8] = []
        bytes.appendBigEndian(seconds)
        bytes.appendBigEndian(fraction)
        return bytes
    }
}
