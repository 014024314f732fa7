/// The two values that tie a receiver's remote control to one AirPlay session: the sender puts them
/// in its RTSP headers (`DACP-ID`, `Active-Remote`); the receiver looks up `iTunes_Ctrl_<DACP-ID>`
/// in `_dacp._tcp` and sends its commands there with the same `Active-Remote`.
public struct DACPSession: Sendable, Equatable {
    /// 16 upper-case hexadecimal digits (a 64-bit id).
    public let dacpID: String
    /// A decimal 32-bit number, as the sender sent it.
    public let activeRemote: String

    public init(dacpID: String, activeRemote: String) throws(DACPError) {
        guard dacpID.utf8.count == 16, dacpID.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x41...0x46).contains($0) }) else {
            throw DACPError(.invalidArgument, "a DACP-ID is 16 upper-case hexadecimal digits, not \"\(dacpID)\"")
        }
        guard !activeRemote.isEmpty, activeRemote.utf8.allSatisfy({ (0x30...0x39).contains($0) }), UInt32(activeRemote) != nil else {
            throw DACPError(.invalidArgument, "an Active-Remote is a decimal number of 32 bits, not \"\(activeRemote)\"")
        }
        self.dacpID = dacpID
        self.activeRemote = activeRemote
    }

    /// A new session's values, random as a sender makes them; the DACP-ID never starts with 0
    /// (`startsWithZero`).
    public static func random() -> DACPSession {
        let id = String(UInt64.random(in: 0x1000_0000_0000_0000 ... .max), radix: 16, uppercase: true)
        // Both are valid by construction: 16 upper-case hex digits, a nonzero 32-bit number.
        return try! DACPSession(dacpID: id, activeRemote: String(UInt32.random(in: 1 ... .max)))
    }

    /// Whether the DACP-ID starts with 0, which shairport-sync 3.3.8 cannot match: it drops the
    /// leading zeros of the `iTunes_Ctrl_` name it finds and compares with the header as sent, so a
    /// sender must not use such an id (its receiver's remote would reach nobody).
    public var startsWithZero: Bool { dacpID.hasPrefix("0") }

    /// The DNS-SD instance name a receiver looks for.
    public var serviceName: String { "iTunes_Ctrl_\(dacpID)" }
}
