import Glibc
import MediaCodecs
import MediaDevice
import MediaRouteIPC

/// The PCM an app writes into a sample ring, in the device's format: records of whatever the app
/// chose (Float32 or Int16, any rate, 1 to 8 channels) come out as the device's Int16 at its rate
/// and channel count, resampled only when the rates differ. Buffers grow only when a record larger
/// than any before arrives: a steady stream reads without allocating.
///
/// `.ended` once the app closed its end and everything it wrote was read (or the system closed the
/// stream); `.starved` when a wait passes with nothing, counted as one of the ring's underruns once
/// the app has started writing.
public final class RingPCMSource: PCMSource, @unchecked Sendable {
    // @unchecked: all mutable state below is touched only by `read`, which the PCMSource contract
    // confines to one thread (the device's sender); the ring itself is thread-safe.
    public let format: PCMFormat
    public let ring: SampleRing
    /// Why reading stopped early, if the ring turned out unusable (a peer wrote nonsense in it):
    /// `read` then says `.ended`.
    public private(set) var failure: SampleRingError?

    private let isOpen: @Sendable () -> Bool
    private let inputChannels: Int
    private let inputType: Resampler.InputType
    private let inputFrameBytes: Int
    private let resampler: Resampler?
    /// Converted samples waiting to be read: `pending[pendingStart..<pendingEnd]`.
    private var pending: UnsafeMutableBufferPointer<Int16>
    private var pendingStart = 0, pendingEnd = 0
    /// Channel-converted input at the app's rate, before the resampler (Float32 or Int16).
    private let stage: UnsafeMutableRawBufferPointer
    /// A record that ended mid-frame: the bytes of that frame so far, completed by the next record.
    private let carry: UnsafeMutableRawBufferPointer
    private var carried = 0
    private var started = false
    private var flushed = false
    /// During a read, where converted frames may go straight into the caller's buffer (when
    /// nothing is pending, so order holds and no copy goes through `pending`).
    private var direct: UnsafeMutablePointer<Int16>?
    private var directRoom = 0

    /// Frames converted per step, bounding the staging buffers.
    private static let chunkFrames = 2048

    /// Reads the ring of an app's stream; `.ended` also when the system closes the stream.
    public convenience init(stream: RealtimeSampleStream, format: PCMFormat) throws(CodecError) {
        try self.init(ring: stream.ring, format: format, isOpen: { [weak stream] in stream?.isOpen ?? false })
    }

    /// Reads a bare ring (its consumer's end); `isOpen` false makes reads say `.ended`.
    public init(ring: SampleRing, format: PCMFormat, isOpen: @escaping @Sendable () -> Bool = { true }) throws(CodecError) {
        guard case .audio(let rate, let channels, let type) = ring.format else {
            throw CodecError("a ring of \(ring.format) carries no audio to play as PCM")
        }
        guard (1...8).contains(channels), rate > 0 else { throw CodecError("cannot play a ring of \(ring.format): 1 to 8 channels at a positive rate are possible") }
        guard (1...2).contains(format.channels), format.sampleRate > 0 else { throw CodecError("cannot produce \(format): 1 or 2 channels at a positive rate are possible") }
        self.format = format
        self.ring = ring
        self.isOpen = isOpen
        inputChannels = channels
        inputType = type == .float32 ? .float32 : .int16
        inputFrameBytes = ring.format.frameBytes
        resampler = rate == format.sampleRate ? nil : try Resampler(from: rate, to: format.sampleRate, channels: format.channels, inputType: inputType)
        let capacity = (resampler?.outputCapacity(forInputFrames: Self.chunkFrames) ?? Self.chunkFrames) * format.channels * 2
        pending = .allocate(capacity: capacity)
        stage = .allocate(byteCount: Self.chunkFrames * format.channels * 4, alignment: 16)
        carry = .allocate(byteCount: max(inputFrameBytes, 1) * Self.chunkFrames, alignment: 16)
    }

    deinit {
        pending.deallocate()
        stage.deallocate()
        carry.deallocate()
    }

    public func read(into buffer: UnsafeMutableBufferPointer<Int16>, waitingUpTo timeout: Duration) -> PCMRead {
        let channels = format.channels
        let wanted = buffer.count / channels
        guard wanted > 0, let out = buffer.baseAddress else { return .starved }
        var deadline: UInt64?  // taken only when a wait is needed: a read that finds data asks no clock
        var written = 0
        while true {
            let take = min(wanted - written, (pendingEnd - pendingStart) / channels)
            if take > 0 {
                (out + written * channels).update(from: pending.baseAddress! + pendingStart, count: take * channels)
                pendingStart += take * channels
                written += take
                if pendingStart == pendingEnd { (pendingStart, pendingEnd) = (0, 0) }
            }
            if written == wanted { return .frames(written) }
            if failure != nil { return written > 0 ? .frames(written) : .ended }
            if pull(into: out + written * channels, room: wanted - written, written: &written) { continue }
            if written > 0 { return .frames(written) }
            if !isOpen() { return .ended }
            if ring.producerClosed {
                // Closed after the last look: one more, then what the resampler still holds.
                if pull(into: out, room: wanted, written: &written) { continue }
                if !flushed, flushResampler() { continue }
                return .ended
            }
            let now = SampleRing.monotonicNow()
            let end = deadline ?? now &+ UInt64(max(timeout.nanoseconds, 0))
            deadline = end
            guard now < end else {
                if started { ring.noteUnderrun() }
                return .starved
            }
            _ = ring.waitForRecord(timeout: .nanoseconds(max(end - now, 1_000_000)))
        }
    }

    /// Converts the oldest record, straight into `destination` as far as `room` frames go (adding
    /// them to `written`), the rest onto `pending`; false if the ring is empty (or unusable).
    private func pull(into destination: UnsafeMutablePointer<Int16>, room: Int, written: inout Int) -> Bool {
        direct = destination
        directRoom = room
        defer {
            written += room - directRoom
            direct = nil
            directRoom = 0
        }
        do {
            let got = try ring.read { record, _ in absorb(record) }
            if got { started = true }
            return got
        } catch {
            failure = error
            return false
        }
    }

    private func absorb(_ record: UnsafeRawBufferPointer) {
        guard var source = record.baseAddress else { return }
        var remaining = record.count
        if carried > 0 {
            let take = min(inputFrameBytes - carried, remaining)
            (carry.baseAddress! + carried).copyMemory(from: source, byteCount: take)
            carried += take
            source += take
            remaining -= take
            guard carried == inputFrameBytes else { return }
            convert(UnsafeRawPointer(carry.baseAddress!), frames: 1)
            carried = 0
        }
        let frames = remaining / inputFrameBytes
        if Int(bitPattern: source) % inputType.bytes == 0 {
            var done = 0
            while done < frames {
                let count = min(Self.chunkFrames, frames - done)
                convert(source + done * inputFrameBytes, frames: count)
                done += count
            }
        } else {
            // After an odd-sized record the samples are misaligned: copy them aligned first.
            var done = 0
            while done < frames {
                let count = min(Self.chunkFrames, frames - done)
                carry.baseAddress!.copyMemory(from: source + done * inputFrameBytes, byteCount: count * inputFrameBytes)
                convert(UnsafeRawPointer(carry.baseAddress!), frames: count)
                done += count
            }
        }
        let rest = remaining - frames * inputFrameBytes
        if rest > 0 {
            carry.baseAddress!.copyMemory(from: source + frames * inputFrameBytes, byteCount: rest)
            carried = rest
        }
    }

    /// Converts `frames` whole input frames (aligned, at most `chunkFrames`) onto `pending`.
    private func convert(_ input: UnsafeRawPointer, frames: Int) {
        let channels = format.channels
        guard let resampler else {
            var input = input, frames = frames
            if let target = direct, directRoom > 0, pendingStart == pendingEnd {
                let count = min(frames, directRoom)
                plainConvert(input, frames: count, into: target)
                direct = target + count * channels
                directRoom -= count
                input += count * inputFrameBytes
                frames -= count
            }
            if frames > 0 {
                plainConvert(input, frames: frames, into: reserve(frames * channels))
                pendingEnd += frames * channels
            }
            return
        }
        switch inputType {
        case .float32:
            ChannelConverter.convert(input.assumingMemoryBound(to: Float.self), channels: inputChannels, frames: frames,
                                     into: stage.baseAddress!.assumingMemoryBound(to: Float.self), channels: channels)
        case .int16:
            ChannelConverter.convert(input.assumingMemoryBound(to: Int16.self), channels: inputChannels, frames: frames,
                                     into: stage.baseAddress!.assumingMemoryBound(to: Int16.self), channels: channels)
        }
        var done = 0
        while done < frames {
            let room = resampler.outputCapacity(forInputFrames: frames - done) * channels
            let target = reserve(room)
            do {
                let (consumed, written) = try resampler.process(UnsafeRawPointer(stage.baseAddress! + done * channels * inputType.bytes), frames: frames - done,
                                                                into: UnsafeMutableBufferPointer(start: target, count: room))
                pendingEnd += written * channels
                done += consumed
                if consumed == 0 && written == 0 { break }
            } catch {
                failure = SampleRingError("the app's audio could not be resampled to \(format): \(error)")
                return
            }
        }
    }

    private func plainConvert(_ input: UnsafeRawPointer, frames: Int, into target: UnsafeMutablePointer<Int16>) {
        switch inputType {
        case .float32: ChannelConverter.convert(input.assumingMemoryBound(to: Float.self), channels: inputChannels, frames: frames, into: target, channels: format.channels)
        case .int16: ChannelConverter.convert(input.assumingMemoryBound(to: Int16.self), channels: inputChannels, frames: frames, into: target, channels: format.channels)
        }
    }

    /// What the resampler still holds, at the end of the stream; true if that gave anything.
    private func flushResampler() -> Bool {
        flushed = true
        guard let resampler else { return false }
        let before = pendingEnd
        while true {
            let room = 1024 * format.channels
            let target = reserve(room)
            guard let written = try? resampler.flush(into: UnsafeMutableBufferPointer(start: target, count: room)), written > 0 else { break }
            pendingEnd += written * format.channels
        }
        return pendingEnd > before
    }

    /// Room for `samples` more at `pendingEnd`: compacts, and grows only past the largest yet.
    private func reserve(_ samples: Int) -> UnsafeMutablePointer<Int16> {
        let base = pending.baseAddress!
        if pending.count - pendingEnd < samples, pendingStart > 0 {
            memmove(base, base + pendingStart, (pendingEnd - pendingStart) * 2)
            pendingEnd -= pendingStart
            pendingStart = 0
        }
        if pending.count - pendingEnd < samples {
            let grown = UnsafeMutableBufferPointer<Int16>.allocate(capacity: max(pending.count * 2, pendingEnd + samples))
            grown.baseAddress!.update(from: base, count: pendingEnd)
            pending.deallocate()
            pending = grown
        }
        return pending.baseAddress! + pendingEnd
    }
}
