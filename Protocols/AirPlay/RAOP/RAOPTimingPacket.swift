/// RAOP's timing exchange, NTP-like: the receiver asks (0xd2) with its transmit time, the sender
/// answers (0xd3) with that time as the origin and its own receive and transmit times. A receiver
/// ignores sync packets until one of its requests has been answered.
public enum RAOPTimingPacket {
    /// The answer to `request`, or nil if it is not a timing request.
    public static func reply(to request: [UInt8], received: NTPTimestamp, now: NTPTimestamp = .now()) -> [UInt8]? {
        guard request.count >= 32, request[1] & 0x7f == 0x52 else { return nil }
        var bytes: [UInt8] = [0x80, 0xd3, 0x00, 0x07, 0, 0, 0, 0]
        bytes += request[24..<32]   // origin: the request's transmit time
        bytes += received.bytes
        bytes += now.bytes
        return bytes
    }
}
