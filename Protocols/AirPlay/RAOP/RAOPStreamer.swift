import Foundation
import Glibc
import PCMPlayback
import Synchronization

/// One RAOP audio stream, sent on a thread of its own: it reads 44.1 kHz stereo PCM from a source,
/// frames each 352 frames as ALAC in RTP, encrypts it for an `et=1` session, keeps it for resends
/// and sends it to the receiver's audio port when it is due on CLOCK_MONOTONIC, with a sync packet
/// on the control port each second. One `clock_nanosleep` per packet and no allocation per packet:
/// the stream costs its system calls, as a C loop does, instead of task and event-loop hops. A
/// stop is seen within a packet's time, or the source's read wait.
///
/// The stream starts with a flagged sync and `leadInPackets` of silence sent at once (see
/// `RAOPSender` for why), and again after an underrun of more than half a second.
final class RAOPStreamer: Sendable {
    /// Where the stream starts on the wire, and what it announces.
    struct Start: Sendable {
        var sequence: UInt16
        var timestamp: UInt32
        let ssrc: UInt32
        let latencyFrames: UInt32
        let leadInPackets: Int
        let encryption: RAOPEncryption?
    }

    /// The audio socket (connected to the receiver's audio port) and the control socket with the
    /// receiver's control address. Both stay the sender's; it stops the stream before closing them.
    struct Sockets: Sendable {
        let audio: Int32
        let control: Int32
        let controlAddress: UDPAddress
    }

    /// What the stream has done so far: read by the sender for `unplayed`, the next FLUSH and resumes.
    struct Progress: Sendable {
        var sequence: UInt16
        var timestamp: UInt32
        /// When the current timeline started, and the caller's frames sent on it since.
        var timeline: (start: UInt64, frames: Int)?
        var leadInPackets = 0
        var sentAny = false
    }

    private let source: any PCMSource
    private let sockets: Sockets
    private let start: Start
    private let history: PacketHistory
    private let onFirstPacket: @Sendable () -> Void
    private let onEnd: @Sendable () -> Void
    private let stopping = Atomic(false)
    private let state: Mutex<Progress>
    private let end = ThreadEnding<RAOPStreamEnding>()

    /// The thread starts at once.
    init(source: any PCMSource, sockets: Sockets, start: Start, history: PacketHistory, onFirstPacket: @escaping @Sendable () -> Void,
         onEnd: @escaping @Sendable () -> Void = {}) throws(RAOPError) {
        guard source.format.sampleRate == ALACFrame.sampleRate, source.format.channels == ALACFrame.channels else {
            throw RAOPError(.invalidArgument, "AirPlay 1 takes 44,100 Hz stereo, not \(source.format)")
        }
        self.source = source
        self.sockets = sockets
        self.start = start
        self.history = history
        self.onFirstPacket = onFirstPacket
        self.onEnd = onEnd
        state = Mutex(Progress(sequence: start.sequence, timestamp: start.timestamp))
        let thread = Thread { [self] in
            let ending = run()
            onEnd()
            end.set(ending)
        }
        thread.name = "raop-stream"
        thread.start()
    }

    var progress: Progress { state.withLock { $0 } }

    /// How the stream ended, nil while it runs.
    var ending: RAOPStreamEnding? { end.current }

    /// Ends the stream; `ended` then returns within a packet's time or the source's read wait (100 ms at most).
    func stop() { stopping.store(true, ordering: .releasing) }

    /// How the stream ended, once the thread has left.
    var ended: RAOPStreamEnding {
        get async { await end.value }
    }

    // MARK: The sending thread

    private static let packetSamples = ALACFrame.framesPerPacket * ALACFrame.channels
    private static let packetBytes = RTPAudioPacket.headerBytes + ALACFrame.uncompressedSize
    /// Long enough for an app's record interval, short enough that `stop()` is seen soon.
    private static let readWait = Duration.milliseconds(100)
    /// Falling further behind than this is an underrun: the stream starts afresh, it does not burst.
    private static let stall: UInt64 = 500_000_000

    private var isStopping: Bool { stopping.load(ordering: .acquiring) }

    private func run() -> RAOPStreamEnding {
        var cipher: AESCBCEncryptor?
        do throws(RAOPError) { cipher = try start.encryption.map { encryption throws(RAOPError) in try AESCBCEncryptor(encryption) } } catch { return .failed(error) }
        let pcm = UnsafeMutableBufferPointer<Int16>.allocate(capacity: Self.packetSamples)
        let silence = UnsafeMutableBufferPointer<Int16>.allocate(capacity: Self.packetSamples)
        let packet = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.packetBytes, alignment: 16)
        silence.initialize(repeating: 0)
        defer {
            pcm.deallocate()
            silence.deallocate()
            packet.deallocate()
        }
        var writer = PacketWriter(packet: packet, sockets: sockets, start: start, cipher: cipher, history: history)
        var timeline: (start: UInt64, frames: Int)?
        var filled = 0
        while !isStopping {
            switch source.read(into: UnsafeMutableBufferPointer(rebasing: pcm[(filled * ALACFrame.channels)...]), waitingUpTo: Self.readWait) {
            case .frames(let frames):
                filled += frames
                guard filled == ALACFrame.framesPerPacket else { continue }
                filled = 0
            case .starved:
                continue
            case .ended:
                if isStopping { return .stopped }
                guard filled > 0 else { return .sourceEnded }
                (pcm.baseAddress! + filled * ALACFrame.channels).update(repeating: 0, count: Self.packetSamples - filled * ALACFrame.channels)
                filled = 0
                if let ending = send(pcm, with: &writer, on: &timeline, silence: silence) { return ending }
                return .sourceEnded
            }
            if let ending = send(pcm, with: &writer, on: &timeline, silence: silence) { return ending }
        }
        return .stopped
    }

    /// Sends one packet of the caller's when it is due: on a new timeline (the first packet, or
    /// after a stall) the flagged sync and the lead-in silence go first.
    private func send(_ pcm: UnsafeMutableBufferPointer<Int16>, with writer: inout PacketWriter, on timeline: inout (start: UInt64, frames: Int)?,
                      silence: UnsafeMutableBufferPointer<Int16>) -> RAOPStreamEnding? {
        let now = MonotonicClock.now()
        if let current = timeline {
            let due = current.start + UInt64(current.frames) * 1_000_000_000 / UInt64(ALACFrame.sampleRate)
            if now > due + Self.stall {
                timeline = nil
            } else if due > now {
                MonotonicClock.sleep(until: due)
                if isStopping { return .stopped }
            }
        }
        var leadIn = 0, failure: RAOPError?
        if timeline == nil {
            writer.sync(first: true, nextTimestamp: writer.timestamp &+ UInt32(start.leadInPackets * ALACFrame.framesPerPacket), latencyFrames: start.latencyFrames)
            for index in 0..<start.leadInPackets where failure == nil {
                failure = writer.emit(silence, marker: index == 0)
                if failure == nil { leadIn += 1 }
            }
            timeline = (MonotonicClock.now(), 0)
        } else if writer.packetsSinceSync >= ALACFrame.sampleRate / ALACFrame.framesPerPacket {
            writer.sync(first: false, nextTimestamp: writer.timestamp, latencyFrames: start.latencyFrames)
        }
        if failure == nil {
            failure = writer.emit(pcm, marker: false)
            if failure == nil { timeline?.frames += ALACFrame.framesPerPacket }
        }
        // Published whatever happened: the next stream goes on from the sequence numbers used.
        let first = state.withLock { state in
            state.timeline = timeline
            state.sequence = writer.sequence
            state.timestamp = writer.timestamp
            state.leadInPackets += leadIn
            defer { state.sentAny = state.sentAny || failure == nil }
            return !state.sentAny && failure == nil
        }
        if let failure { return .failed(failure) }
        if first { onFirstPacket() }
        return nil
    }
}

/// How a stream ended.
public enum RAOPStreamEnding: Sendable, Equatable {
    /// The source ended and everything it gave was sent.
    case sourceEnded
    /// The sender stopped it (pause, stop, flush, teardown).
    case stopped
    /// The receiver went away (its audio port refuses), or a packet could not be made.
    case failed(RAOPError)
}
