/// One RAOP audio packet: RTP version 2, payload type 0x60 (96), the marker on a stream's first
/// packet, sequence number, RTP timestamp (frames at 44.1 kHz) and SSRC, then the ALAC frame.
public struct RTPAudioPacket: Sendable, Equatable {
    public static let payloadType: UInt8 = 0x60
    public var marker: Bool
    public var sequence: UInt16
    public var timestamp: UInt32
    public var ssrc: UInt32
    public var payload: [UInt8]

    public init(marker: Bool, sequence: UInt16, timestamp: UInt32, ssrc: UInt32, payload: [UInt8]) {
        self.marker = marker
        self.sequence = sequence
        self.timestamp = timestamp
        self.ssrc = ssrc
        self.payload = payload
    }

    public var bytes: [UInt8] {
        var header = [UInt8](repeating: 0, count: Self.headerBytes)
        header.withUnsafeMutableBytes { Self.writeHeader(marker: marker, sequence: sequence, timestamp: timestamp, ssrc: ssrc, into: $0) }
        return header + payload
    }

    public static let headerBytes = 12

    /// The 12-byte header written in place: the sending thread's path, which builds each packet
    /// in one buffer.
    static func writeHeader(marker: Bool, sequence: UInt16, timestamp: UInt32, ssrc: UInt32, into bytes: UnsafeMutableRawBufferPointer) {
        bytes.storeBytes(of: 0x80, toByteOffset: 0, as: UInt8.self)
        bytes.storeBytes(of: (marker ? 0x80 : 0) | payloadType, toByteOffset: 1, as: UInt8.self)
        bytes.storeBytes(of: sequence.bigEndian, toByteOffset: 2, as: UInt16.self)
        bytes.storeBytes(of: timestamp.bigEndian, toByteOffset: 4, as: UInt32.self)
        bytes.storeBytes(of: ssrc.bigEndian, toByteOffset: 8, as: UInt32.self)
    }
}

extension Array where Element == UInt8 {
    mutating func appendBigEndian<T: FixedWidthInteger>(_ value: T) {
        for shift in stride(from: T.bitWidth - 8, through: 0, by: -8) { append(UInt8(truncatingIfNeeded: value >> shift)) }
    }

    /// The big-endian integer at `offset`, nil past the end.
    func bigEndian<T: FixedWidthInteger>(_: T.Type, at offset: Int) -> T? {
        guard offset >= 0, offset + T.bitWidth / 8 <= count else { return nil }
        return self[offset..<(offset + T.bitWidth / 8)].reduce(T.zero) { $0 << 8 | T($1) }
    }
}
