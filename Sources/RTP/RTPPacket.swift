/// One RTP packet (RFC 3550). Writes the fixed 12-byte header only; reads skip CSRCs, a header
/// extension and padding.
public struct RTPPacket: Sendable, Hashable {
    public var marker: Bool
    public var payloadType: UInt8
    public var sequence: UInt16
    public var timestamp: UInt32
    public var ssrc: UInt32
    public var payload: [UInt8]

    public init(marker: Bool = false, payloadType: UInt8, sequence: UInt16, timestamp: UInt32, ssrc: UInt32, payload: [UInt8]) {
        self.marker = marker
        self.payloadType = payloadType
        self.sequence = sequence
        self.timestamp = timestamp
        self.ssrc = ssrc
        self.payload = payload
    }

    public static let headerSize = 12

    /// Writes the header into the first 12 bytes of `buffer` (the caller puts the payload after it).
    public static func writeHeader(into buffer: UnsafeMutableRawBufferPointer, marker: Bool, payloadType: UInt8, sequence: UInt16,
                                   timestamp: UInt32, ssrc: UInt32) {
        buffer[0] = 0x80  // version 2, no padding, no extension, no CSRC
        buffer[1] = (marker ? 0x80 : 0) | (payloadType & 0x7f)
        buffer.storeBytes(of: sequence.bigEndian, toByteOffset: 2, as: UInt16.self)
        buffer.storeBytes(of: timestamp.bigEndian, toByteOffset: 4, as: UInt32.self)
        buffer.storeBytes(of: ssrc.bigEndian, toByteOffset: 8, as: UInt32.self)
    }

    public var bytes: [UInt8] {
        var bytes = [UInt8](repeating: 0, count: Self.headerSize + payload.count)
        bytes.withUnsafeMutableBytes { buffer in
            Self.writeHeader(into: buffer, marker: marker, payloadType: payloadType, sequence: sequence, timestamp: timestamp, ssrc: ssrc)
        }
        bytes.replaceSubrange(Self.headerSize..., with: payload)
        return bytes
    }

    /// Reads a datagram; throws for anything that is not an RTP version 2 packet (the error says what).
    public init(datagram: UnsafeRawBufferPointer) throws(RTPError) {
        guard datagram.count >= Self.headerSize else { throw RTPError("a datagram of \(datagram.count) bytes is shorter than an RTP header") }
        guard datagram[0] >> 6 == 2 else { throw RTPError("RTP version \(datagram[0] >> 6), not 2") }
        var start = Self.headerSize + Int(datagram[0] & 0x0f) * 4
        if datagram[0] & 0x10 != 0 {  // header extension: skip it
            guard datagram.count >= start + 4 else { throw RTPError("an RTP header extension runs past the datagram") }
            start += 4 + Int(UInt16(datagram[start + 2]) << 8 | UInt16(datagram[start + 3])) * 4
        }
        var end = datagram.count
        if datagram[0] & 0x20 != 0 {  // padding: its length, never 0, is the last byte
            let padding = Int(datagram[datagram.count - 1])
            guard padding > 0 else { throw RTPError("an RTP packet says it is padded but its padding length is 0") }
            end -= padding
        }
        guard start <= end else { throw RTPError("an RTP packet's header and padding are longer than the packet") }
        marker = datagram[1] & 0x80 != 0
        payloadType = datagram[1] & 0x7f
        sequence = UInt16(datagram[2]) << 8 | UInt16(datagram[3])
        timestamp = UInt32(datagram[4]) << 24 | UInt32(datagram[5]) << 16 | UInt32(datagram[6]) << 8 | UInt32(datagram[7])
        ssrc = UInt32(datagram[8]) << 24 | UInt32(datagram[9]) << 16 | UInt32(datagram[10]) << 8 | UInt32(datagram[11])
        payload = Array(datagram[start..<end])
    }
}

/// An RTP packet or payload that cannot be read; the sentence says what is wrong.
public struct RTPError: Error, Sendable, Hashable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

extension UInt16 {
    /// How far `self` is ahead of `other` in RTP sequence arithmetic (negative when behind).
    public func distance(after other: UInt16) -> Int { Int(Int16(bitPattern: self &- other)) }
}
