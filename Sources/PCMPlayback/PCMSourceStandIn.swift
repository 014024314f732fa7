// TEMPORARY: a copy of the PCM source API owned by PCMSource.swift's author, so this branch builds
// before theirs merges. Delete this file at merge; the API is byte-identical.

/// Interleaved signed 16-bit native-endian PCM: what SBC (and ALAC for AirPlay) take.
public struct PCMFormat: Sendable, Hashable, CustomStringConvertible {
    public var sampleRate: Int
    public var channels: Int
    public init(sampleRate: Int, channels: Int) {
        self.sampleRate = sampleRate
        self.channels = channels
    }
    public var bytesPerFrame: Int { channels * 2 }
    public var description: String { "\(sampleRate) Hz, \(channels) channels" }
}

public enum PCMRead: Sendable, Equatable {
    case frames(Int)   // > 0 frames written at the start of the buffer
    case starved       // nothing within the wait: an underrun
    case ended         // nothing more, ever
}

/// Where a sample-only device's PCM comes from: an app's sample ring, or a URL played here.
/// Read by one thread only (the device's sender), which paces it in real time.
public protocol PCMSource: AnyObject, Sendable {
    var format: PCMFormat { get }
    /// Fills up to `buffer.count / format.channels` frames, waiting up to `timeout` for the first.
    func read(into buffer: UnsafeMutableBufferPointer<Int16>, waitingUpTo timeout: Duration) -> PCMRead
}
