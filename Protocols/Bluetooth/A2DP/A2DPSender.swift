import Foundation
import Glibc
import MediaCodecs
import PCMPlayback
import Synchronization

/// Sends one stream to a Bluetooth sink: on a thread of its own, pulls PCM from a `PCMSource`,
/// encodes it to SBC, frames it into A2DP media packets sized to the transport's write MTU, and
/// writes each to the BlueZ transport (a connected SOCK_SEQPACKET socket) when it is due, paced on
/// CLOCK_MONOTONIC from its RTP timestamp so the sink's small buffer is fed at the media rate, not
/// in bursts. The transport descriptor stays the caller's (the driver releases the BlueZ transport).
///
/// Congestion (the socket refuses with EAGAIN) is waited out until the next packet is due, then
/// the packet is dropped and counted: late audio is worse than a gap. The device going away
/// (EPIPE, ECONNRESET) ends the stream with a sentence saying so.
public final class A2DPSender: Sendable {
    /// How the stream ended: `onEnd` receives it once.
    public enum Ending: Sendable, Hashable {
        /// The source ended and everything it gave was sent.
        case sourceEnded
        /// `stop()` was called.
        case stopped
        /// The device went away, or a packet could not be encoded or written.
        case failed(A2DPError)
    }

    public struct Statistics: Sendable, Hashable {
        public var packets = 0
        /// Bytes of packets written (headers included).
        public var bytes = 0
        /// PCM frames sent (the RTP timestamp's progress, dropped packets included).
        public var frames = 0
        /// Reads of the source that found nothing in time, once it had started giving PCM.
        public var underruns = 0
        /// Packets dropped because the link stayed congested.
        public var dropped = 0
    }

    /// One packet that left, for latency measurements and progress counts: the PCM frames it
    /// carries (counted from the stream's first) and when it was handed to the transport.
    public struct SentPacket: Sendable, Hashable {
        public var firstFrame: Int
        public var frames: Int
        public var sequence: UInt16
        public var timestamp: UInt32
        public var bytes: Int
        /// CLOCK_MONOTONIC nanoseconds just before the `send` that wrote it.
        public var sentAt: UInt64
    }

    public let configuration: SBCConfiguration
    public let writeMTU: Int
    /// How far ahead of its due time a packet may leave: what the sink buffers beyond the bare minimum.
    public let lead: Duration
    private let source: any PCMSource
    private let transport: Int32
    private let onPacketSent: (@Sendable (SentPacket) -> Void)?
    private let onEnd: @Sendable (Ending) -> Void

    private let paused = Mutex(false)
    private let stopping = Atomic(false)
    private let started = Atomic(false)
    /// A pipe whose read end wakes the thread out of a pacing or pause wait (pause, resume, stop).
    private let control: (read: Int32, write: Int32)
    /// A pipe readable once the thread has ended; never read, so every waiter sees it.
    private let endedSignal: (read: Int32, write: Int32)
    private let ended = ThreadEnding<Ending>()
    private let packetCount = Atomic(0), byteCount = Atomic(0), frameCount = Atomic(0), underrunCount = Atomic(0), dropCount = Atomic(0)

    /// Checks that `source` gives the configuration's PCM and that `writeMTU` carries a frame.
    /// `onPacketSent` runs on the sender's thread after each packet: keep it short.
    /// How early a packet leaves before its due time, unless told otherwise.
    public static let defaultLead: Duration = .milliseconds(10)

    public init(source: any PCMSource, configuration: SBCConfiguration, transport: Int32, writeMTU: Int, lead: Duration = A2DPSender.defaultLead,
                onPacketSent: (@Sendable (SentPacket) -> Void)? = nil, onEnd: @escaping @Sendable (Ending) -> Void) throws(A2DPError) {
        guard source.format == configuration.pcmFormat else {
            throw A2DPError("the PCM source gives \(source.format), but \(configuration) takes \(configuration.pcmFormat)")
        }
        do {
            let encoder = try SBCEncoder(configuration.encoderSettings)
            _ = try A2DPPacketizer(frameBytes: encoder.frameBytes, samplesPerFrame: configuration.encoderSettings.samplesPerFrame, writeMTU: writeMTU)
        } catch let error as A2DPError {
            throw error
        } catch {
            throw A2DPError("cannot send \(configuration): \(error)")
        }
        let control = try Self.makePipe(), endedSignal: (read: Int32, write: Int32)
        do { endedSignal = try Self.makePipe() } catch {
            close(control.read)
            close(control.write)
            throw error
        }
        self.source = source
        self.configuration = configuration
        self.transport = transport
        self.writeMTU = writeMTU
        self.lead = lead
        self.onPacketSent = onPacketSent
        self.onEnd = onEnd
        self.control = control
        self.endedSignal = endedSignal
    }

    deinit {
        for fd in [control.read, control.write, endedSignal.read, endedSignal.write] { close(fd) }
    }

    private static func makePipe() throws(A2DPError) -> (read: Int32, write: Int32) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw A2DPError("cannot create the A2DP sender's wake-up pipe: \(String(cString: strerror(errno)))") }
        for fd in ends {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
        return (ends[0], ends[1])
    }

    /// Starts the sending thread (once).
    public func start() {
        guard !started.exchange(true, ordering: .acquiringAndReleasing) else { return }
        Thread.detachNewThread { [self] in
            let ending = run()
            onEnd(ending)
            ended.set(ending)
            var one: UInt8 = 1
            _ = Glibc.write(endedSignal.write, &one, 1)
        }
    }

    /// Holds the stream: once this returns no packet leaves and the source is not read until
    /// `resume()` (the source keeps what it has; an app's ring fills and then refuses records).
    public func pause() {
        paused.withLock { $0 = true }
        wake()
    }

    /// Sends again; the first packet leaves at once and pacing starts afresh from it.
    public func resume() {
        paused.withLock { $0 = false }
        wake()
    }

    public var isPaused: Bool { paused.withLock { $0 } }

    /// Ends the stream: the thread notices within about 100 ms and reports `.stopped`.
    public func stop() {
        stopping.store(true, ordering: .releasing)
        wake()
    }

    public var statistics: Statistics {
        Statistics(packets: packetCount.load(ordering: .relaxed), bytes: byteCount.load(ordering: .relaxed), frames: frameCount.load(ordering: .relaxed),
                   underruns: underrunCount.load(ordering: .relaxed), dropped: dropCount.load(ordering: .relaxed))
    }

    /// Blocks until the thread has ended, at most `timeout`; how it ended, or nil if it had not.
    public func waitUntilEnded(timeout: Duration) -> Ending? {
        var ready = pollfd(fd: endedSignal.read, events: Int16(POLLIN), revents: 0)
        let milliseconds = timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000
        _ = poll(&ready, 1, Int32(clamping: max(milliseconds, 0)))
        return ended.current
    }

    /// How the stream ended, once it has (after `onEnd` ran).
    public var ending: Ending {
        get async { await ended.value }
    }

    private func wake() {
        var one: UInt8 = 1
        _ = Glibc.write(control.write, &one, 1)
    }

    // MARK: The sending thread

    private enum Wait { case due, paused, stopping }

    private func run() -> Ending {
        let settings = configuration.encoderSettings
        let encoder: SBCEncoder
        var packetizer: A2DPPacketizer
        do {
            encoder = try SBCEncoder(settings)
            packetizer = try A2DPPacketizer(frameBytes: encoder.frameBytes, samplesPerFrame: settings.samplesPerFrame, writeMTU: writeMTU)
        } catch {
            return .failed(A2DPError("cannot send \(configuration): \(error)"))
        }
        let channels = settings.channels, rate = UInt64(settings.sampleRate)
        let pcm = UnsafeMutableBufferPointer<Int16>.allocate(capacity: packetizer.samplesPerPacket * channels)
        let packet = UnsafeMutableRawBufferPointer.allocate(byteCount: packetizer.maximumPacketBytes, alignment: 8)
        defer {
            pcm.deallocate()
            packet.deallocate()
        }
        let packetNanoseconds = UInt64(packetizer.samplesPerPacket) * 1_000_000_000 / rate
        // Long enough for an app's usual record interval, short enough that stop() is noticed.
        let readTimeout = Duration.nanoseconds(Int64(min(max(2 * packetNanoseconds, 20_000_000), 80_000_000)))
        let leadNanoseconds = UInt64(max(lead.components.seconds * 1_000_000_000 + lead.components.attoseconds / 1_000_000_000, 0))
        var filled = 0  // PCM frames in `pcm`
        var sentFrames = 0  // PCM frames handed to the packetizer so far
        var anchor: (time: UInt64, frame: Int)?  // the pacing clock: when frame `frame` was due
        var started = false  // before the source's first frames, waiting is not an underrun

        func sendPacket(frames pcmFrames: Int) -> Ending? {
            let sbcFrames = (pcmFrames + settings.samplesPerFrame - 1) / settings.samplesPerFrame
            let padded = sbcFrames * settings.samplesPerFrame
            if padded > pcmFrames { (pcm.baseAddress! + pcmFrames * channels).update(repeating: 0, count: (padded - pcmFrames) * channels) }
            let length: Int
            do {
                let body = UnsafeMutableRawBufferPointer(rebasing: packet[A2DPPacketizer.headerBytes...])
                _ = try encoder.encode(UnsafeRawBufferPointer(start: pcm.baseAddress, count: sbcFrames * encoder.codesize), into: body)
                length = try packetizer.finishPacket(packet, frames: sbcFrames)
            } catch {
                return .failed(A2DPError("an A2DP packet could not be made: \(error)"))
            }
            let firstFrame = sentFrames
            sentFrames += padded
            frameCount.wrappingAdd(padded, ordering: .relaxed)
            // Due when its first frame is, on a clock started by the first packet after a gap.
            var now = Self.now()
            if let start = anchor, now > start.time + UInt64(firstFrame - start.frame) * 1_000_000_000 / rate + 2 * packetNanoseconds + leadNanoseconds {
                anchor = nil  // more than two packets late (a stall): restart the clock rather than burst to catch up
            }
            let start = anchor ?? (now, firstFrame)
            anchor = start
            let due = start.time + UInt64(firstFrame - start.frame) * 1_000_000_000 / rate
            switch waitUntil(due > leadNanoseconds ? due - leadNanoseconds : 0) {
            case .stopping: return .stopped
            case .paused:
                switch waitWhilePaused() {
                case .stopping: return .stopped
                default:
                    now = Self.now()
                    anchor = (now, firstFrame)
                }
            case .due: break
            }
            let nextDue = (anchor?.time ?? now) + UInt64(sentFrames - (anchor?.frame ?? firstFrame)) * 1_000_000_000 / rate
            return write(UnsafeRawBufferPointer(rebasing: packet[0..<length]), frames: padded, firstFrame: firstFrame, giveUpAt: nextDue, packetizer: packetizer)
        }

        while true {
            if stopping.load(ordering: .acquiring) { return .stopped }
            if paused.withLock({ $0 }) {
                if case .stopping = waitWhilePaused() { return .stopped }
                anchor = nil
                continue
            }
            let space = UnsafeMutableBufferPointer(rebasing: pcm[(filled * channels)...])
            switch source.read(into: space, waitingUpTo: readTimeout) {
            case .frames(let count):
                started = true
                filled += count
                if filled == packetizer.samplesPerPacket {
                    filled = 0
                    if let ending = sendPacket(frames: packetizer.samplesPerPacket) { return ending }
                }
            case .starved:
                if started { underrunCount.wrappingAdd(1, ordering: .relaxed) }
                anchor = nil  // the sink went without: pace afresh from the next packet
            case .ended:
                if filled > 0, let ending = sendPacket(frames: filled) { return ending }
                return stopping.load(ordering: .acquiring) ? .stopped : .sourceEnded
            }
        }
    }

    /// Writes one packet, unless paused (checked under the pause lock, so that after `pause()`
    /// returns nothing leaves). EAGAIN: waits for room until `giveUpAt`, then drops it.
    private func write(_ bytes: UnsafeRawBufferPointer, frames: Int, firstFrame: Int, giveUpAt: UInt64, packetizer: A2DPPacketizer) -> Ending? {
        while true {
            // Counted under the lock too: once pause() returns, the counters hold every packet sent.
            var sentAt: UInt64 = 0
            let result: Int? = paused.withLock { isPaused in
                if isPaused { return nil }
                sentAt = Self.now()
                let sent = send(transport, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
                guard sent >= 0 else { return -Int(errno) }
                packetCount.wrappingAdd(1, ordering: .relaxed)
                byteCount.wrappingAdd(sent, ordering: .relaxed)
                return sent
            }
            guard let result else {
                // Paused between its due time and now: it leaves on resume.
                if case .stopping = waitWhilePaused() { return .stopped }
                continue
            }
            if result >= 0 {
                onPacketSent?(SentPacket(firstFrame: firstFrame, frames: frames, sequence: packetizer.sequence &- 1,
                                         timestamp: packetizer.timestamp &- UInt32(truncatingIfNeeded: frames), bytes: result, sentAt: sentAt))
                return nil
            }
            switch -result {
            case Int(EINTR): continue
            case Int(EAGAIN), Int(EWOULDBLOCK):
                // The link is congested: wait for room until the next packet is due, then drop this one.
                var fds = [pollfd(fd: transport, events: Int16(POLLOUT), revents: 0), pollfd(fd: control.read, events: Int16(POLLIN), revents: 0)]
                let now = Self.now()
                if now >= giveUpAt {
                    dropCount.wrappingAdd(1, ordering: .relaxed)
                    return nil
                }
                _ = poll(&fds, 2, Int32(clamping: (giveUpAt - now + 999_999) / 1_000_000))
                if fds[1].revents != 0 { drainControl() }
                if stopping.load(ordering: .acquiring) { return .stopped }
            case Int(EPIPE), Int(ECONNRESET), Int(ENOTCONN), Int(ECONNREFUSED), Int(EBADF):
                return .failed(A2DPError("the Bluetooth device went away: its audio transport is closed (\(String(cString: strerror(Int32(-result)))))"))
            default:
                return .failed(A2DPError("an A2DP packet could not be written to the Bluetooth transport: \(String(cString: strerror(Int32(-result))))"))
            }
        }
    }

    /// Sleeps until `deadline` on CLOCK_MONOTONIC, or until paused or stopped.
    private func waitUntil(_ deadline: UInt64) -> Wait {
        while true {
            if stopping.load(ordering: .acquiring) { return .stopping }
            if paused.withLock({ $0 }) { return .paused }
            let now = Self.now()
            if now >= deadline { return .due }
            let remaining = deadline - now
            if remaining > 1_000_000 {
                // Whole milliseconds in poll (woken by pause and stop), the rest in a precise sleep.
                var ready = pollfd(fd: control.read, events: Int16(POLLIN), revents: 0)
                if poll(&ready, 1, Int32(clamping: remaining / 1_000_000)) > 0 { drainControl() }
            } else {
                MonotonicClock.sleep(until: deadline)
            }
        }
    }

    /// Sleeps while paused; `.stopping` if stopped meanwhile.
    private func waitWhilePaused() -> Wait {
        while paused.withLock({ $0 }) {
            if stopping.load(ordering: .acquiring) { return .stopping }
            var ready = pollfd(fd: control.read, events: Int16(POLLIN), revents: 0)
            if poll(&ready, 1, 100) > 0 { drainControl() }
        }
        return stopping.load(ordering: .acquiring) ? .stopping : .due
    }

    private func drainControl() {
        var bytes = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        while Glibc.read(control.read, &bytes, 32) == 32 {}
    }

    static func now() -> UInt64 { MonotonicClock.now() }
}
