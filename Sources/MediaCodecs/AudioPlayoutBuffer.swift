import RTP
import Synchronization

/// Between the network and the sound card, for one Opus stream: packets go in as they arrive (any
/// order, any spacing), PCM comes out at the pace the sound card takes it.
///
/// - It holds about `targetDelay` of audio: the spread of the packets' transit times
///   (`PlayoutDelayEstimator`) above a floor of one packet and one read, so it is small on
///   loopback and grows on a jittery network.
/// - Drift between the sender's clock and the card's (and a target that moved) is taken up by
///   playing a little faster or slower (±0.5 %, up to ±2 % when far off; interpolated): what it
///   holds goes back to the target without a click. Holding 60 ms more than the target (the card
///   stalled while packets came), it skips what is too much at once, crossfaded over 5 ms.
/// - A packet missing when its turn comes is concealed by libopus (PLC) in its place; when nothing
///   at all is there (an underrun), concealment is inserted instead, and the packet, when it comes,
///   plays after it. Past `concealmentLimit` it plays silence and fills up to the target again.
///
/// `insert` (the network's thread) and `read` (the card's) may run on different threads.
public final class AudioPlayoutBuffer: Sendable {
    public struct Statistics: Sendable, Equatable {
        /// Times the card found nothing to play and the stream then went on (counted when it does:
        /// a stream that ended ran dry too, and that is no underrun).
        public var underruns = 0
        /// Frames made up by concealment, for lost packets and underruns (not the concealment that
        /// fades out a stream that ended).
        public var concealedFrames = 0
        /// Packets whose turn came before they did, concealed in their place.
        public var lost = 0
        /// Packets that came after their turn (played or concealed already), dropped.
        public var late = 0
        /// What the buffer aims to hold, and what it held at the last read (smoothed).
        public var targetDelay: Duration = .zero
        public var bufferedDelay: Duration = .zero
        /// The network's jitter as measured.
        public var jitter: Duration = .zero
        /// Audio skipped to get back to the target after the card stalled while packets came.
        public var skipped: Duration = .zero
    }

    public let sampleRate: Int
    public let channels: Int
    /// Frames per `read` the card takes (part of the floor of the target).
    public let readFrames: Int
    public let concealmentLimit: Duration
    private let state: Mutex<State>

    /// `readFrames` is how many frames each `read` asks for (the card's period).
    public init(sampleRate: Int = 48_000, channels: Int = 2, readFrames: Int = 480, concealmentLimit: Duration = .milliseconds(100)) throws(CodecError) {
        self.sampleRate = sampleRate
        self.channels = channels
        self.readFrames = readFrames
        self.concealmentLimit = concealmentLimit
        let decoder = try OpusDecoder(sampleRate: sampleRate, channels: channels)
        state = Mutex(State(decoder: decoder, channels: channels, estimator: PlayoutDelayEstimator(clockRate: sampleRate)))
    }

    public var statistics: Statistics {
        state.withLock { state in
            var statistics = state.statistics
            statistics.targetDelay = .nanoseconds(Int64(target(state) * 1e9))
            statistics.bufferedDelay = .nanoseconds(Int64(state.smoothedLevel * 1e9))
            statistics.jitter = state.estimator.jitter
            return statistics
        }
    }

    /// Takes a packet that arrived at `arrival`.
    public func insert(_ packet: RTPPacket, arrival: ContinuousClock.Instant = .now) {
        state.withLock { state in
            state.estimator.add(timestamp: packet.timestamp, arrival: arrival)
            if let next = state.next {
                let distance = packet.sequence.distance(after: next)
                if abs(distance) > AudioJitterBuffer.resynchronizeDistance {
                    state.packets.removeAll()   // a sender that restarted: its order starts again here
                    state.next = packet.sequence
                } else if distance < 0 {
                    state.statistics.late += 1
                    return
                }
            } else {
                state.next = packet.sequence
            }
            state.packets[packet.sequence] = packet
        }
    }

    /// What `read` gave.
    public enum Content: Sendable, Equatable {
        /// Audio decoded or concealed within a stream.
        case audio
        /// Silence while filling up to the target (at the start and after a long underrun).
        case filling
    }

    /// Fills `output` (whole frames, interleaved) with what plays next.
    public func read(into output: UnsafeMutableBufferPointer<Float>) -> Content {
        state.withLock { state in
            let frames = output.count / channels
            let level = self.level(state)
            state.smoothedLevel += (level - state.smoothedLevel) * 0.05
            let target = self.target(state)
            if state.filling {
                guard level >= target else {
                    output.update(repeating: 0)
                    return .filling
                }
                state.filling = false
                state.smoothedLevel = level
                // After a long underrun, play from the oldest packet held, not from the gap before it.
                if state.fifo.count == state.start, let next = state.next,
                   let oldest = state.packets.keys.min(by: { $0.distance(after: next) < $1.distance(after: next) }) {
                    state.next = oldest
                }
            }
            // Far too much (a sound server that stalled while packets came): skip what is too much
            // at once, crossfaded over 5 ms, rather than play fast for seconds.
            if state.smoothedLevel - target > 0.06 { skipAhead(&state, Int((state.smoothedLevel - target - 0.01) * Double(sampleRate))) }
            // Slightly faster when holding too much, slower when too little; exact in between. Up to
            // ±0.5 % (drift is parts per million), up to ±2 % when far off (a sound server that
            // stalled and left a backlog): 100 ms more than the target go in about 5 s.
            let error = state.smoothedLevel - target
            let limit = min(0.02, 0.005 + max(0, abs(error) - 0.02) * 0.375)
            let ratio = abs(error) < 0.002 ? 1.0 : 1 + min(limit, max(-limit, error * 0.25))
            let needed = Int((state.position + ratio * Double(frames)).rounded(.up)) + 1
            while state.available < needed {
                guard produce(&state) else {
                    // Past the concealment limit: silence, and fill up again.
                    state.fifo.removeAll(keepingCapacity: true)
                    state.start = 0
                    state.position = 0
                    state.filling = true
                    output.update(repeating: 0)
                    return .filling
                }
            }
            for frame in 0..<frames {
                let index = Int(state.position)
                let fraction = Float(state.position - Double(index))
                let at = state.start + index * channels
                for channel in 0..<channels {
                    let a = state.fifo[at + channel], b = state.fifo[at + channels + channel]
                    output[frame * channels + channel] = fraction == 0 ? a : a + (b - a) * fraction
                }
                state.position += ratio
            }
            let whole = Int(state.position)
            state.start += whole * channels
            state.position -= Double(whole)
            if state.start > 48_000 * channels {
                state.fifo.removeFirst(state.start)
                state.start = 0
            }
            return .audio
        }
    }

    /// Drops `frames` of what is held, fading from what would have played into what plays after them.
    private func skipAhead(_ state: inout State, _ frames: Int) {
        let fade = sampleRate / 200
        while state.available < Int(state.position) + frames + fade + 2, let next = state.next, state.packets[next] != nil {
            _ = produce(&state)
        }
        let whole = Int(state.position)
        guard frames > 0, state.available >= whole + frames + fade + 2 else { return }
        state.start += whole * channels
        state.position -= Double(whole)
        for frame in 0..<fade {
            let weight = Float(frame) / Float(fade)
            for channel in 0..<channels {
                let from = state.start + frame * channels + channel, to = from + frames * channels
                state.fifo[to] = state.fifo[from] * (1 - weight) + state.fifo[to] * weight
            }
        }
        state.start += frames * channels
        state.smoothedLevel -= Double(frames) / Double(sampleRate)
        state.statistics.skipped += .nanoseconds(Int64(frames) * 1_000_000_000 / Int64(sampleRate))
    }

    /// Decodes the next packet, or conceals one; false past the concealment limit.
    private func produce(_ state: inout State) -> Bool {
        guard let next = state.next else { return false }
        var conceal = false
        if state.packets[next] == nil {
            if state.packets.isEmpty {
                // An underrun: concealment inserted, the packet (if it comes) plays after it.
                state.runningDry = true
                guard Double(state.concealedRun * state.frameSize) < Self.seconds(concealmentLimit) * Double(sampleRate) else { return false }
            } else {
                // Lost (or so late that its turn passed): concealed in its place.
                state.statistics.lost += 1
                state.next = next &+ 1
            }
            conceal = true
        }
        let packet = conceal ? nil : state.packets.removeValue(forKey: next)
        if packet != nil { state.next = next &+ 1 }
        let decoder = state.decoder, frameSize = state.frameSize
        var scratch = state.scratch
        state.scratch = []
        defer { state.scratch = scratch }
        let decoded: Int
        do {
            decoded = try scratch.withUnsafeMutableBufferPointer { pcm in
                if let packet {
                    return try packet.payload.withUnsafeBytes { bytes in
                        try decoder.decode(bytes, into: pcm.baseAddress!, frameSize: pcm.count / channels)
                    }
                }
                return try decoder.decode(nil, into: pcm.baseAddress!, frameSize: frameSize)
            }
        } catch {
            // A packet libopus cannot read is concealed as if lost.
            state.concealedRun += 1
            state.statistics.concealedFrames += 1
            state.fifo.append(contentsOf: repeatElement(0, count: frameSize * channels))
            return true
        }
        if packet != nil {
            state.frameSize = decoded
            state.concealedRun = 0
            if state.runningDry {
                state.statistics.underruns += 1
                state.statistics.concealedFrames += state.dryConcealed
            }
            state.runningDry = false
            state.dryConcealed = 0
        } else {
            state.concealedRun += 1
            if state.runningDry { state.dryConcealed += 1 } else { state.statistics.concealedFrames += 1 }
        }
        state.fifo.append(contentsOf: scratch[0..<(decoded * channels)])
        return true
    }

    /// Seconds of audio held: decoded and not yet played, and from the next packet's turn to the newest one's end.
    private func level(_ state: borrowing State) -> Double {
        var frames = Double(state.available) - state.position
        if let next = state.next, let newest = state.packets.keys.map({ $0.distance(after: next) }).max() {
            frames += Double((newest + 1) * state.frameSize)
        }
        return frames / Double(sampleRate)
    }

    /// The delay aimed at: one packet and one read (what a steady stream needs), 5 ms, and the jitter.
    private func target(_ state: borrowing State) -> Double {
        Double(state.frameSize + readFrames) / Double(sampleRate) + 0.005 + Self.seconds(state.estimator.jitter)
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
    }

    private struct State: ~Copyable {
        let decoder: OpusDecoder
        var estimator: PlayoutDelayEstimator
        var packets: [UInt16: RTPPacket] = [:]
        var next: UInt16?
        /// Decoded PCM not yet played, from `start`; `position` is the fractional frame read next.
        var fifo: [Float] = []
        var start = 0
        var position = 0.0
        var frameSize = 960
        var concealedRun = 0
        /// Concealing (or silent) because nothing came: an underrun once something comes again.
        var runningDry = false
        /// Frames concealed while running dry: counted when the stream goes on.
        var dryConcealed = 0
        var filling = true
        var smoothedLevel = 0.0
        var statistics = Statistics()
        var scratch: [Float]
        let channels: Int

        init(decoder: OpusDecoder, channels: Int, estimator: PlayoutDelayEstimator) {
            self.decoder = decoder
            self.channels = channels
            self.estimator = estimator
            scratch = [Float](repeating: 0, count: decoder.sampleRate * channels * 120 / 1000)
        }

        /// Whole frames decoded and not yet consumed.
        var available: Int { (fifo.count - start) / channels }
    }
}
