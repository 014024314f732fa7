import RTP
import Testing

/// RTP from the network is untrusted: every malformed packet is refused with a reason or skipped,
/// never a crash, and no sequence of packets makes the receiver do unbounded work.
@Suite("RTP: packets, H.264 payloads, the audio jitter buffer", .timeLimit(.minutes(1)))
struct RTPTests {
    private func parse(_ bytes: [UInt8]) throws -> RTPPacket {
        try bytes.withUnsafeBytes { try RTPPacket(datagram: $0) }
    }

    @Test func aPacketReadsBackWhatWasWritten() throws {
        let packet = RTPPacket(marker: true, payloadType: 96, sequence: 65535, timestamp: 0xDEAD_BEEF, ssrc: 0x0102_0304, payload: [1, 2, 3])
        #expect(try parse(packet.bytes) == packet)
    }

    @Test func csrcsAnExtensionAndPaddingAreSkipped() throws {
        var bytes = RTPPacket(payloadType: 111, sequence: 7, timestamp: 1, ssrc: 2, payload: []).bytes
        bytes[0] |= 0x20 | 0x10 | 0x02  // padding, extension, two CSRCs
        bytes += [0, 0, 0, 1, 0, 0, 0, 2]  // the CSRCs
        bytes += [0xBE, 0xDE, 0, 1, 9, 9, 9, 9]  // a one-word extension
        bytes += [42, 43]  // the payload
        bytes += [0, 0, 3]  // three bytes of padding
        #expect(try parse(bytes).payload == [42, 43])
    }

    @Test(arguments: [
        ([UInt8](repeating: 0x80, count: 11), "shorter than an RTP header"),
        ([0x40] + [UInt8](repeating: 0, count: 11), "RTP version 1, not 2"),
        ([0xA0] + [UInt8](repeating: 0, count: 11), "padding length is 0"),
        ([0xA0] + [UInt8](repeating: 0, count: 10) + [200], "longer than the packet"),
        ([0x90] + [UInt8](repeating: 0, count: 11), "header extension runs past"),
        ([0x8F] + [UInt8](repeating: 0, count: 11), "longer than the packet"),
    ])
    func malformedPacketsAreRefusedWithTheReason(bytes: [UInt8], reason: String) {
        #expect {
            _ = try parse(bytes)
        } throws: { ($0 as? RTPError)?.message.contains(reason) == true }
    }

    // MARK: H.264

    @Test func largeNALUnitsSurviveFragmentationWhole() throws {
        let idr: [UInt8] = [0x65] + (0..<5000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let sps: [UInt8] = [0x67, 1, 2, 3]
        var packets: [RTPPacket] = []
        for nal in [sps, idr] {
            nal.withUnsafeBytes { buffer in
                H264Packetizer().payloads(for: buffer) { payload in
                    packets.append(RTPPacket(payloadType: 96, sequence: UInt16(packets.count), timestamp: 0, ssrc: 1, payload: Array(payload)))
                }
            }
        }
        #expect(packets.count == 1 + 5)  // the SPS whole, the IDR in 1,198-byte fragments
        var depacketizer = H264Depacketizer()
        let stream = packets.flatMap { depacketizer.add($0).annexB }
        #expect(stream == [0, 0, 0, 1] + sps + [0, 0, 0, 1] + idr)
    }

    @Test func aTinyPayloadLimitStillMakesProgress() {
        var packetizer = H264Packetizer()
        packetizer.maximumPayload = 0
        var count = 0
        [UInt8](repeating: 0x41, count: 10).withUnsafeBytes { buffer in packetizer.payloads(for: buffer) { _ in count += 1 } }
        #expect(count == 9)  // one byte of the NAL per fragment, never an endless loop
    }

    @Test func aLossDropsEverythingUntilTheNextKeyframeAndAsksForOne() {
        var depacketizer = H264Depacketizer()
        _ = depacketizer.add(RTPPacket(payloadType: 96, sequence: 1, timestamp: 0, ssrc: 1, payload: [0x41, 1]))
        let afterGap = depacketizer.add(RTPPacket(payloadType: 96, sequence: 3, timestamp: 0, ssrc: 1, payload: [0x41, 2]))
        #expect(afterGap.needsKeyframe && afterGap.annexB.isEmpty && depacketizer.lost == 1)
        #expect(depacketizer.add(RTPPacket(payloadType: 96, sequence: 4, timestamp: 0, ssrc: 1, payload: [0x41, 3])).annexB.isEmpty)
        #expect(depacketizer.add(RTPPacket(payloadType: 96, sequence: 5, timestamp: 0, ssrc: 1, payload: [0x65, 4])).annexB == [0, 0, 0, 1, 0x65, 4])
    }

    @Test func aZeroLengthUnitInAnAggregateIsSkipped() {
        var depacketizer = H264Depacketizer()
        // STAP-A: a 0-byte unit, then a 2-byte one the reader must not reach.
        let output = depacketizer.add(RTPPacket(payloadType: 96, sequence: 1, timestamp: 0, ssrc: 1, payload: [24, 0, 0, 0, 2, 0x41, 9]))
        #expect(output.annexB.isEmpty)
        let valid = depacketizer.add(RTPPacket(payloadType: 96, sequence: 2, timestamp: 0, ssrc: 1, payload: [24, 0, 2, 0x41, 9]))
        #expect(valid.annexB == [0, 0, 0, 1, 0x41, 9])
    }

    @Test func aFragmentThatNeverEndsIsDroppedAtTheLimit() {
        var depacketizer = H264Depacketizer()
        let middle = [UInt8](repeating: 7, count: 1200)
        _ = depacketizer.add(RTPPacket(payloadType: 96, sequence: 0, timestamp: 0, ssrc: 1, payload: [28, 0x85] + middle))  // start of an IDR
        var dropped = false
        for sequence in 1...UInt16(H264Depacketizer.maximumNALSize / middle.count + 2) {
            let output = depacketizer.add(RTPPacket(payloadType: 96, sequence: sequence, timestamp: 0, ssrc: 1, payload: [28, 0x05] + middle))
            if output.needsKeyframe { dropped = true; break }
        }
        #expect(dropped)
        // The next keyframe decodes again.
        #expect(!depacketizer.add(RTPPacket(payloadType: 96, sequence: 5000, timestamp: 0, ssrc: 1, payload: [0x65, 1])).annexB.isEmpty)
    }

    // MARK: Audio

    private func audio(_ sequence: UInt16) -> RTPPacket { RTPPacket(payloadType: 111, sequence: sequence, timestamp: 0, ssrc: 1, payload: [UInt8(truncatingIfNeeded: sequence)]) }

    private func sequences(_ slots: [AudioJitterBuffer.Slot]) -> [Int] {
        slots.map { if case .packet(let packet) = $0 { Int(packet.sequence) } else { -1 } }
    }

    @Test func packetsInOrderPassAtOnceAndALateOneIsWaitedFor() {
        var buffer = AudioJitterBuffer(patience: .milliseconds(30))
        let start = ContinuousClock.now
        #expect(sequences(buffer.add(audio(10), at: start)) == [10])
        #expect(sequences(buffer.add(audio(12), at: start)).isEmpty)  // 11 may still come
        #expect(sequences(buffer.add(audio(11), at: start + .milliseconds(5))) == [11, 12])
        #expect(buffer.lost == 0)
    }

    @Test func aGapWaitedForLongEnoughIsConcealed() {
        var buffer = AudioJitterBuffer(patience: .milliseconds(30))
        let start = ContinuousClock.now
        _ = buffer.add(audio(1), at: start)
        _ = buffer.add(audio(3), at: start)
        #expect(sequences(buffer.poll(at: start + .milliseconds(10))).isEmpty)
        #expect(sequences(buffer.poll(at: start + .milliseconds(40))) == [-1, 3])
        #expect(buffer.lost == 1)
        #expect(sequences(buffer.add(audio(2), at: start + .milliseconds(41))).isEmpty)  // too late: already concealed
    }

    @Test func aHugeJumpStartsAgainInsteadOfConcealingThousandsOfFrames() {
        var buffer = AudioJitterBuffer()
        let start = ContinuousClock.now
        _ = buffer.add(audio(100), at: start)
        #expect(sequences(buffer.add(audio(30_100), at: start)) == [30_100])
        #expect(buffer.lost == 29_999)
        #expect(sequences(buffer.add(audio(30_101), at: start)) == [30_101])
        // A sender that restarted far behind is followed too, not discarded as late forever.
        #expect(sequences(buffer.add(audio(5), at: start)) == [5])
        #expect(sequences(buffer.add(audio(6), at: start)) == [6])
    }
}
