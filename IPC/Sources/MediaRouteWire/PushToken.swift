/// A device token a push is addressed to (APNs's "device token", in the path `/3/device/TOKEN`):
/// hex digits, an even number of them from 16 to 200, written in lowercase. The daemon's endpoint
/// and the CLI check a token by the same rule.
package enum PushToken {
    /// How many hex digits a token may have (an even number of them).
    package static let digits = 16...200
    /// The rule, for sentences that refuse a token.
    package static let rule = "a device token is 16 to 200 hex digits, an even number of them"

    /// `text` in lowercase, or nil when it is not a device token.
    package static func normalized(_ text: some StringProtocol) -> String? {
        let count = text.utf8.count
        guard digits.contains(count), count % 2 == 0, text.utf8.allSatisfy(isHexDigit) else { return nil }
        return text.lowercased()
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte)
    }
}
