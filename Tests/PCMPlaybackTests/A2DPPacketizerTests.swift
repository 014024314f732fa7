import A2DP
import MediaCodecs
import Testing

/// A2DP media packets: RTP header, SBC payload header, whole frames up to the MTU.
@Suite("A2DP: packetizer", .timeLimit(.minutes(1)))
struct A2DPPacketizerTests {
    @Test(arguments: [(672, 5), (895, 7), (1005, 8), (2000, 15)])
    func wholeFramesFillTheMTU(mtu: Int, frames: Int) throws {
        let settings = SBCConfiguration().encoderSettings  // 119-byte frames
        let packetizer = try A2DPPacketizer(frameBytes: settings.frameBytes, samplesPerFrame: settings.samplesPerFrame, writeMTU: mtu)
        #expect(packetizer.framesPerPacket == frames)
        #expect(packetizer.maximumPacketBytes <= mtu)
    }

    @Test func headersAreRTPAndSBCAndContinue() throws {
        var packetizer = try A2DPPacketizer(frameBytes: 119, samplesPerFrame: 128, writeMTU: 895, sequence: 65534, timestamp: 0xFFFF_FF00)
        var buffer = [UInt8](repeating: 0xAB, count: packetizer.maximumPacketBytes)
        var packets: [A2DPMediaPacket] = []
        for frames in [7, 7, 3] {
            let length = try buffer.withUnsafeMutableBytes { try packetizer.finishPacket($0, frames: frames) }
            #expect(length == 13 + frames * 119)
            packets.append(try A2DPMediaPacket(bytes: Array(buffer[0..<length])))
        }
        #expect(buffer[0] == 0x80 && buffer[1] == 96)
        #expect(packets.map(\.sequence) == [65534, 65535, 0])
        #expect(packets.map(\.timestamp) == [0xFFFF_FF00, 0xFFFF_FF00 &+ 896, 0xFFFF_FF00 &+ 1792])
        #expect(packets.allSatisfy { $0.payloadType == 96 && $0.ssrc == 1 && !$0.fragmented })
        #expect(packets.map(\.frameCount) == [7, 7, 3])
        #expect(packetizer.sequence == 1 && packetizer.timestamp == 0xFFFF_FF00 &+ 2176)
    }

    @Test func anMTUTooSmallForOneFrameIsRefused() {
        #expect { try A2DPPacketizer(frameBytes: 119, samplesPerFrame: 128, writeMTU: 100) } throws: {
            ($0 as? A2DPError)?.message == "the transport's write MTU of 100 bytes cannot carry one 119-byte SBC frame with its 13 bytes of headers (132 needed)"
        }
        #expect(throws: A2DPError.self) {
            var packetizer = try A2DPPacketizer(frameBytes: 119, samplesPerFrame: 128, writeMTU: 672)
            var buffer = [UInt8](repeating: 0, count: 2000)
            _ = try buffer.withUnsafeMutableBytes { try packetizer.finishPacket($0, frames: 6) }
        }
    }
}
