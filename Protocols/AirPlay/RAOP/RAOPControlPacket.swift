/// The packets of RAOP's control channel: the sync packet (0xd4) that ties an RTP timestamp to NTP
/// time so the receiver knows when to play what, the receiver's resend request (0xd5), and the
/// resent audio packet (0xd6) that answers it.
public enum RAOPControlPacket: Sendable, Equatable {
    case sync(first: Bool, playingTimestamp: UInt32, time: NTPTimestamp, nextTimestamp: UInt32)
    case resendRequest(firstSequence: UInt16, count: UInt16)
    case resentAudio(packet: [UInt8])

    public var bytes: [UInt8] {
        switch self {
        case let .sync(first, playingTimestamp, time, nextTimestamp):
            // The extension bit flags the first sync of a stream (and after a flush).
            var bytes: [UInt8] = [first ? 0x90 : 0x80, 0xd4, 0x00, 0x07]
            bytes.appendBigEndian(playingTimestamp)
            bytes += time.bytes
            bytes.appendBigEndian(nextTimestamp)
            return bytes
        case let .resendRequest(firstSequence, count):
            var bytes: [UInt8] = [0x80, 0xd5, 0x00, 0x01]
            bytes.appendBigEndian(firstSequence)
            bytes.appendBigEndian(count)
            return bytes
        case let .resentAudio(packet):
            return [0x80, 0xd6, 0x00, 0x01] + packet
        }
    }

    /// A resend request from the receiver; nil for anything else (or too short).
    public static func parseResendRequest(_ bytes: [UInt8]) -> RAOPControlPacket? {
        guard bytes.count >= 8, bytes[1] & 0x7f == 0x55,
              let first = bytes.bigEndian(UInt16.self, at: 4), let count = bytes.bigEndian(UInt16.self, at: 6) else { return nil }
        return .resendRequest(firstSequence: first, count: count)
    }
}
