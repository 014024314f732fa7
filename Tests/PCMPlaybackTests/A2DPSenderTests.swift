import A2DP
import Glibc
import MediaCodecs
import MediaRouteIPC
import PCMPlayback
import Synchronization
import Testing
import TestSupport

/// The A2DP source's media path end to end: an app's ring, RingPCMSource, SBC, A2DP packets on a
/// SOCK_SEQPACKET socket the test reads as a sink would, paced in real time.
@Suite("A2DP: sender", .timeLimit(.minutes(1)), .onAThreadOfItsOwn)
struct A2DPSenderTests {
    static let configuration = SBCConfiguration()  // 48 kHz joint stereo, bitpool 53: 119-byte frames, 7 per 895-byte packet

    /// Records every ending `onEnd` reports.
    final class Endings: Sendable {
        let all = Mutex<[A2DPSender.Ending]>([])
        var callback: @Sendable (A2DPSender.Ending) -> Void { { ending in self.all.withLock { $0.append(ending) } } }
    }

    @Test func twoSecondsOfToneArrivePacedContinuousAndDecodable() throws {
        let (ring, tone) = try AppRing.tone(.audio(sampleRate: 48_000, channels: 2, sampleType: .float32), seconds: 2, close: true)
        let source = try RingPCMSource(ring: ring, format: Self.configuration.pcmFormat)
        let transport = try TransportPair()
        let endings = Endings()
        let probes = Mutex<[A2DPSender.SentPacket]>([])
        let sender = try A2DPSender(source: source, configuration: Self.configuration, transport: transport.sender, writeMTU: 895,
                                    onPacketSent: { sent in probes.withLock { $0.append(sent) } }, onEnd: endings.callback)
        let startedAt = monotonicNow()
        sender.start()
        var arrivals: [TransportPair.Arrival] = []
        let deadline = monotonicNow() + 10_000_000_000
        while monotonicNow() < deadline {
            if let arrival = try transport.receive(timeoutMilliseconds: 100) {
                arrivals.append(arrival)
            } else if sender.waitUntilEnded(timeout: .zero) != nil {
                break  // ended, and nothing more in the socket
            }
        }
        #expect(sender.waitUntilEnded(timeout: .seconds(1)) == .sourceEnded)
        #expect(endings.all.withLock { $0 } == [.sourceEnded])
        try #require(arrivals.count > 10)

        // Continuity: every sequence number once, timestamps advancing by the frames carried.
        for (previous, next) in zip(arrivals, arrivals.dropFirst()) {
            #expect(next.packet.sequence == previous.packet.sequence &+ 1)
            #expect(next.packet.timestamp == previous.packet.timestamp &+ UInt32(previous.packet.frameCount * 128))
        }
        #expect(arrivals.dropLast().allSatisfy { $0.packet.frameCount == 7 && $0.packet.payloadType == 96 && $0.packet.ssrc == 1 })
        let frames = arrivals.reduce(0) { $0 + $1.packet.frameCount * 128 }
        #expect(frames >= 96_000 && frames < 96_000 + 128)
        let statistics = sender.statistics
        #expect(statistics.packets == arrivals.count && statistics.dropped == 0 && statistics.frames == frames)

        // Pacing: the ring held all 2 s at once, yet no packet left before its media time counted
        // from the sender's start (less its 10 ms lead and a millisecond of scheduling), so 2 s took at least 1.8 s.
        let first = arrivals[0]
        for arrival in arrivals {
            let mediaNanoseconds = UInt64(arrival.packet.timestamp &- first.packet.timestamp) * 1_000_000_000 / 48_000
            #expect(arrival.at + 11_000_000 >= startedAt + mediaNanoseconds, "packet \(arrival.packet.sequence) came early")
        }
        #expect(arrivals.last!.at - first.at >= 1_800_000_000)

        // The latency probe saw every packet leave, before it arrived, with the frames it carried.
        let sent = probes.withLock { $0 }
        try #require(sent.count == arrivals.count)
        for (index, (probe, arrival)) in zip(sent, arrivals).enumerated() {
            #expect(probe.sequence == arrival.packet.sequence && probe.timestamp == arrival.packet.timestamp)
            #expect(probe.firstFrame == index * 896 && probe.sentAt <= arrival.at)
        }

        // The sound: decoded with libsbc, the tone with SNR ≥ 25 dB once lined up.
        let decoder = try SBCDecoder()
        var pcm: [Int16] = []
        for arrival in arrivals { pcm += try arrival.packet.frames.withUnsafeBytes { try decoder.decode($0) } }
        let (snr, lag) = ToneAnalysis.alignedSNR(reference: tone, decoded: ToneAnalysis.channel(0, of: pcm, channels: 2), maximumLag: 400, margin: 1024)
        #expect(snr >= 25, "SNR \(snr) dB at lag \(lag)")
        #expect(abs(ToneAnalysis.frequency(of: ToneAnalysis.channel(1, of: pcm, channels: 2), sampleRate: 48_000) - 1000) < 2)
    }

    @Test func theSinkClosingEndsTheStreamNamingIt() throws {
        let (ring, _) = try AppRing.tone(.audio(sampleRate: 48_000, channels: 2, sampleType: .int16), seconds: 2, close: false)
        let transport = try TransportPair()
        let endings = Endings()
        let sender = try A2DPSender(source: try RingPCMSource(ring: ring, format: Self.configuration.pcmFormat), configuration: Self.configuration,
                                    transport: transport.sender, writeMTU: 672, onEnd: endings.callback)
        sender.start()
        for _ in 0..<3 { _ = try #require(try transport.receive(timeoutMilliseconds: 1000)) }
        transport.closeSink()
        let ending = sender.waitUntilEnded(timeout: .seconds(2))
        guard case .failed(let error)? = ending else {
            Issue.record("the sender did not fail when its sink went away: \(String(describing: ending))")
            return
        }
        #expect(error.message.contains("the Bluetooth device went away"))
        #expect(endings.all.withLock { $0 } == [ending!])
    }

    @Test func nothingLeavesWhilePausedAndTheStreamContinuesAfter() async throws {
        let (ring, _) = try AppRing.tone(.audio(sampleRate: 48_000, channels: 2, sampleType: .float32), seconds: 3, close: true)
        let transport = try TransportPair()
        let sender = try A2DPSender(source: try RingPCMSource(ring: ring, format: Self.configuration.pcmFormat), configuration: Self.configuration,
                                    transport: transport.sender, writeMTU: 1005, onEnd: { _ in })
        sender.start()
        var last: TransportPair.Arrival?
        for _ in 0..<4 { last = .some(try #require(try transport.receive(timeoutMilliseconds: 1000))) }
        sender.pause()
        let sentBeforePause = sender.statistics.packets
        var received = 4
        // Drain what was sent before the pause; then, for 300 ms, nothing may arrive.
        while let arrival = try transport.receive(timeoutMilliseconds: 300) {
            last = arrival
            received += 1
        }
        #expect(received == sentBeforePause)
        #expect(sender.statistics.packets == sentBeforePause)
        let resumedAt = monotonicNow()
        sender.resume()
        let next = try #require(try transport.receive(timeoutMilliseconds: 1000))
        #expect(next.packet.sequence == last!.packet.sequence &+ 1)
        #expect(next.packet.timestamp == last!.packet.timestamp &+ UInt32(8 * 128))
        #expect(next.at >= resumedAt)
        let stoppedAt = monotonicNow()
        sender.stop()
        #expect(sender.waitUntilEnded(timeout: .seconds(2)) == .stopped)
        #expect(monotonicNow() - stoppedAt < 500_000_000, "stop() took over half a second")
        #expect(await sender.ending == .stopped)
    }

    @Test func mismatchedPCMAndATooSmallMTUAreRefused() throws {
        let ring = try SampleRing.create(format: .defaultAudio, capacity: 1 << 16)
        let transport = try TransportPair()
        let mono = try RingPCMSource(ring: ring, format: PCMFormat(sampleRate: 44_100, channels: 1))
        #expect { try A2DPSender(source: mono, configuration: Self.configuration, transport: transport.sender, writeMTU: 895, onEnd: { _ in }) } throws: {
            ($0 as? A2DPError)?.message.contains("gives 44100 Hz, 1 channel, int16") == true
        }
        let stereo = try RingPCMSource(ring: ring, format: Self.configuration.pcmFormat)
        #expect { try A2DPSender(source: stereo, configuration: Self.configuration, transport: transport.sender, writeMTU: 100, onEnd: { _ in }) } throws: {
            ($0 as? A2DPError)?.message.contains("write MTU of 100 bytes") == true
        }
    }
}

@Suite("A2DP: sender on a congested link", .timeLimit(.minutes(1)), .onAThreadOfItsOwn)
struct A2DPCongestionTests {
    @Test func packetsTheLinkCannotTakeAreDroppedAndCounted() throws {
        let (ring, _) = try AppRing.tone(.audio(sampleRate: 48_000, channels: 2, sampleType: .int16), seconds: 3, close: true)
        let transport = try TransportPair()
        var small: Int32 = 4096  // a few packets' room, as a congested L2CAP channel has
        #expect(setsockopt(transport.sender, SOL_SOCKET, SO_SNDBUF, &small, socklen_t(MemoryLayout<Int32>.size)) == 0)
        let sender = try A2DPSender(source: try RingPCMSource(ring: ring, format: A2DPSenderTests.configuration.pcmFormat),
                                    configuration: A2DPSenderTests.configuration, transport: transport.sender, writeMTU: 895, onEnd: { _ in })
        sender.start()
        defer {
            sender.stop()
            _ = sender.waitUntilEnded(timeout: .seconds(2))
        }
        // The sink reads nothing until the sender has dropped a packet (checked every 10 ms, for at most 5 s).
        let deadline = monotonicNow() + 5_000_000_000
        var ready = pollfd()
        while sender.statistics.dropped == 0 && monotonicNow() < deadline { _ = poll(&ready, 0, 10) }
        try #require(sender.statistics.dropped > 0, "nothing was dropped while the sink read nothing")
        // What did arrive skips the dropped sequence numbers, and the stream goes on.
        var sequences: [UInt16] = []
        while sequences.count < sender.statistics.packets + 3, let arrival = try transport.receive(timeoutMilliseconds: 1000) {
            sequences.append(arrival.packet.sequence)
        }
        let gaps = zip(sequences, sequences.dropFirst()).filter { $1 != $0 &+ 1 }
        #expect(!gaps.isEmpty, "no sequence gap where packets were dropped")
        #expect(sender.statistics.underruns == 0)
    }
}
