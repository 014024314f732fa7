/// Interleaved signed 16-bit native-endian PCM: what SBC (and ALAC for AirPlay) take.
public struct PCMFormat: Sendable, Hashable, CustomStringConvertible {
    public var sampleRate: Int
    public var channels: Int

    public init(sampleRate: Int, channels: Int) {
        self.sampleRate = sampleRate
        self.channels = channels
    }

    public var bytesPerFrame: Int { channels * 2 }

    public var description: String { "\(sampleRate) Hz, \(channels) channel\(channels == 1 ? "" : "s"), int16" }
}

/// What one read of a `PCMSource` gave.
public enum PCMRead: Sendable, Equatable {
    /// More than zero frames, written at the start of the buffer.
    case frames(Int)
    /// Nothing within the wait: an underrun (the sender sends nothing, or silence).
    case starved
    /// Nothing more, ever (the producer closed, the media ended).
    case ended
}

/// Where a sample-only device's PCM comes from: an app's sample ring, or a URL played here.
/// Read by one thread only (the device's sender), which paces it in real time.
public protocol PCMSource: AnyObject, Sendable {
    var format: PCMFormat { get }
    /// Fills up to `buffer.count / format.channels` frames, waiting up to `timeout` for the first.
    func read(into buffer: UnsafeMutableBufferPointer<Int16>, waitingUpTo timeout: Duration) -> PCMRead
}
