import Glibc

/// The local player as a sample-only device's sender sees it (A2DP, AirPlay): the end of the media
/// is not the end of the stream, since playing again restarts the media on the same transport.
/// The sender idles (`.starved`) until then; it ends when the session stops.
public final class SessionPCMSource: PCMSource {
    public let player: LocalMediaPlayer
    public var format: PCMFormat { player.format }

    public init(_ player: LocalMediaPlayer) { self.player = player }

    public func read(into buffer: UnsafeMutableBufferPointer<Int16>, waitingUpTo timeout: Duration) -> PCMRead {
        let result = player.read(into: buffer, waitingUpTo: timeout)
        guard result == .ended else { return result }
        // Nothing comes before a restart: wait out the time the sender gave, as a read would.
        var interval = timespec(tv_sec: 0, tv_nsec: Int(min(timeout, .milliseconds(50)).components.attoseconds / 1_000_000_000))
        nanosleep(&interval, nil)
        return .starved
    }
}
