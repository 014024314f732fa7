import Foundation
import MediaDevice
import PCMPlayback
import Synchronization

/// An app's live audio as the body of an endless HTTP response: the stream's ring read as 16-bit
/// PCM, big-endian for `audio/L16` or little-endian after a WAV header that never ends. A
/// renderer that opens the URL again (many probe first) takes the audio over from its earlier
/// request, which ends: a ring has one reader.
final class LivePCMStream: Sendable {
    enum Encoding: Sendable { case l16, wav }

    let format: PCMFormat
    let encoding: Encoding
    let mimeType: String
    private let source: Mutex<RingPCMSource>
    private let generation = Atomic<Int>(0)
    /// Frames handed to the renderer so far, for the latency it adds.
    private let served = Atomic<Int>(0)

    /// `format` is what the renderer takes (LPCM is offered at one rate, often 44.1 kHz): the
    /// app's samples are converted and resampled to it.
    init(stream: RealtimeSampleStream, format: PCMFormat, encoding: Encoding, mimeType: String) throws {
        source = Mutex(try RingPCMSource(stream: stream, format: format))
        self.format = format
        self.encoding = encoding
        self.mimeType = mimeType
    }

    /// Seconds of audio served since the current request began.
    var servedSeconds: Double { Double(served.load(ordering: .relaxed)) / Double(format.sampleRate) }

    /// A new response body; an older one still being read ends at its next chunk.
    func makeBody() -> AsyncThrowingStream<[UInt8], any Error> {
        let mine = generation.add(1, ordering: .sequentiallyConsistent).newValue
        served.store(0, ordering: .relaxed)
        let header = encoding == .wav ? Self.wavHeader(format) : nil
        let start = BodyStart()
        return AsyncThrowingStream { [self] in
            if let header, start.isFirst() { return header }
            while generation.load(ordering: .sequentiallyConsistent) == mine {
                switch read() {
                case .bytes(let chunk): return chunk
                case .ended: return nil
                case .starved: try await Task.sleep(for: .milliseconds(10))
                }
            }
            return nil
        }
    }

    /// Whether a body's first chunk (the WAV header) has gone.
    private final class BodyStart: Sendable {
        private let sent = Atomic<Bool>(false)
        func isFirst() -> Bool { !sent.exchange(true, ordering: .relaxed) }
    }

    private enum Chunk { case bytes([UInt8]), starved, ended }

    /// 20 ms of audio at most, without waiting: the body's task must not block its thread.
    private func read() -> Chunk {
        let frames = format.sampleRate / 50
        var samples = [Int16](repeating: 0, count: frames * format.channels)
        let result = source.withLock { source in samples.withUnsafeMutableBufferPointer { source.read(into: $0, waitingUpTo: .zero) } }
        switch result {
        case .ended: return .ended
        case .starved: return .starved
        case .frames(let count):
            served.add(count, ordering: .relaxed)
            let values = samples.prefix(count * format.channels)
            let bigEndian = encoding == .l16
            var bytes = [UInt8]()
            bytes.reserveCapacity(values.count * 2)
            for sample in values {
                let bits = UInt16(bitPattern: sample)
                if bigEndian { bytes.append(UInt8(bits >> 8)); bytes.append(UInt8(bits & 0xFF)) } else { bytes.append(UInt8(bits & 0xFF)); bytes.append(UInt8(bits >> 8)) }
            }
            return .bytes(bytes)
        }
    }

    /// A RIFF/WAVE header for 16-bit PCM whose sizes say "as long as it goes" (0xFFFFFFFF), as
    /// live WAV streams do.
    static func wavHeader(_ format: PCMFormat) -> [UInt8] {
        func le32(_ value: UInt32) -> [UInt8] { withUnsafeBytes(of: value.littleEndian, Array.init) }
        func le16(_ value: UInt16) -> [UInt8] { withUnsafeBytes(of: value.littleEndian, Array.init) }
        let channels = UInt16(format.channels), rate = UInt32(format.sampleRate)
        return Array("RIFF".utf8) + le32(.max) + Array("WAVEfmt ".utf8) + le32(16) + le16(1) + le16(channels) + le32(rate)
            + le32(rate * UInt32(channels) * 2) + le16(channels * 2) + le16(16) + Array("data".utf8) + le32(.max)
    }
}
