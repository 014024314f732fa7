/// An A2DP media packet of SBC read back: what a sink (or a test standing in for one) receives.
public struct A2DPMediaPacket: Sendable, Hashable {
    public var payloadType: UInt8
    public var sequence: UInt16
    public var timestamp: UInt32
    public var ssrc: UInt32
    /// The frame count of the SBC payload header.
    public var frameCount: Int
    public var fragmented: Bool
    /// The SBC frames, after the payload header.
    public var frames: [UInt8]

    /// Reads a packet; refuses anything that is not RTP version 2 with an SBC payload header.
    public init(bytes: UnsafeRawBufferPointer) throws(A2DPError) {
        guard bytes.count > A2DPPacketizer.headerBytes else { throw A2DPError("an A2DP media packet of \(bytes.count) bytes is too short for its headers and a frame") }
        guard bytes[0] >> 6 == 2 else { throw A2DPError("an A2DP media packet must be RTP version 2, not \(bytes[0] >> 6)") }
        let start = A2DPPacketizer.rtpHeaderBytes + Int(bytes[0] & 0x0F) * 4
        guard bytes[0] & 0x30 == 0, bytes.count > start else { throw A2DPError("an A2DP media packet with padding or an RTP header extension is not one this code reads") }
        payloadType = bytes[1] & 0x7F
        sequence = UInt16(bytes[2]) << 8 | UInt16(bytes[3])
        timestamp = UInt32(bytes[4]) << 24 | UInt32(bytes[5]) << 16 | UInt32(bytes[6]) << 8 | UInt32(bytes[7])
        ssrc = UInt32(bytes[8]) << 24 | UInt32(bytes[9]) << 16 | UInt32(bytes[10]) << 8 | UInt32(bytes[11])
        frameCount = Int(bytes[start] & 0x0F)
        fragmented = bytes[start] & 0x80 != 0
        frames = Array(bytes[(start + 1)...])
    }

    public init(bytes: [UInt8]) throws(A2DPError) {
        var result: Result<A2DPMediaPacket, A2DPError>!
        bytes.withUnsafeBytes { buffer in result = Result { () throws(A2DPError) in try A2DPMediaPacket(bytes: buffer) } }
        self = try result.get()
    }
}
