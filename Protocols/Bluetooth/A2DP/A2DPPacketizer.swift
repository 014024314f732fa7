/// Frames SBC into A2DP media packets (A2DP spec §4.3.4): an RTP header (version 2, payload type
/// 96, SSRC 1, the timestamp counted in PCM frames) and the one-byte SBC payload header with the
/// number of frames, then as many whole SBC frames as the transport's write MTU holds (at most 15).
/// SBC frames are never fragmented: a frame is under 512 bytes and A2DP MTUs are larger.
public struct A2DPPacketizer: Sendable {
    public static let rtpHeaderBytes = 12
    /// RTP header plus the SBC payload header: where the first SBC frame goes.
    public static let headerBytes = 13
    public static let maximumFramesPerPacket = 15
    public static let payloadType: UInt8 = 96
    public static let ssrc: UInt32 = 1

    public let frameBytes: Int
    /// PCM frames each SBC frame codes (blocks × subbands): the timestamp's step per SBC frame.
    public let samplesPerFrame: Int
    /// Whole SBC frames per packet at this MTU.
    public let framesPerPacket: Int
    /// The next packet's sequence number and RTP timestamp.
    public private(set) var sequence: UInt16
    public private(set) var timestamp: UInt32

    /// Fails with a sentence when `writeMTU` cannot carry even one frame.
    public init(frameBytes: Int, samplesPerFrame: Int, writeMTU: Int, sequence: UInt16 = .random(in: .min ... .max), timestamp: UInt32 = 0) throws(A2DPError) {
        guard frameBytes > 0, samplesPerFrame > 0 else { throw A2DPError("an SBC frame of \(frameBytes) bytes coding \(samplesPerFrame) samples cannot be packetized") }
        guard writeMTU >= Self.headerBytes + frameBytes else {
            throw A2DPError("the transport's write MTU of \(writeMTU) bytes cannot carry one \(frameBytes)-byte SBC frame with its \(Self.headerBytes) bytes of headers (\(Self.headerBytes + frameBytes) needed)")
        }
        self.frameBytes = frameBytes
        self.samplesPerFrame = samplesPerFrame
        framesPerPacket = min(Self.maximumFramesPerPacket, (writeMTU - Self.headerBytes) / frameBytes)
        self.sequence = sequence
        self.timestamp = timestamp
    }

    /// The longest packet this packetizer makes.
    public var maximumPacketBytes: Int { Self.headerBytes + framesPerPacket * frameBytes }
    /// PCM frames in a full packet.
    public var samplesPerPacket: Int { framesPerPacket * samplesPerFrame }

    /// Writes the headers in front of `frames` SBC frames the caller encoded at
    /// `packet[headerBytes...]`, and moves on to the next packet; returns the packet's length.
    public mutating func finishPacket(_ packet: UnsafeMutableRawBufferPointer, frames: Int) throws(A2DPError) -> Int {
        guard (1...framesPerPacket).contains(frames) else { throw A2DPError("an A2DP packet here carries 1 to \(framesPerPacket) SBC frames, not \(frames)") }
        let length = Self.headerBytes + frames * frameBytes
        guard packet.count >= length else { throw A2DPError("a packet of \(frames) SBC frame(s) needs \(length) bytes, not \(packet.count)") }
        packet[0] = 0x80  // version 2, no padding, extension or CSRC
        packet[1] = Self.payloadType  // no marker
        packet.storeBytes(of: sequence.bigEndian, toByteOffset: 2, as: UInt16.self)
        packet.storeBytes(of: timestamp.bigEndian, toByteOffset: 4, as: UInt32.self)
        packet.storeBytes(of: Self.ssrc.bigEndian, toByteOffset: 8, as: UInt32.self)
        packet[12] = UInt8(frames)  // not fragmented, not a start or last fragment, RFA 0
        sequence &+= 1
        timestamp &+= UInt32(truncatingIfNeeded: frames * samplesPerFrame)
        return length
    }
}
