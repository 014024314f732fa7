import Foundation

/// Data between an app and a device's application, as base64 text on the wire (§11.4).
///
/// The supervisor passes it on as the text it received: it checks the alphabet and the size, and
/// never decodes and re-encodes the bytes. Apps and drivers decode at their edge (`bytes`).
package struct Base64Payload: Codable, Sendable, Hashable {
    package let text: String

    package init(_ bytes: some DataProtocol) { text = Data(bytes).base64EncodedString() }

    /// How many bytes the text holds, from its length and padding alone.
    package var byteCount: Int {
        let utf8 = text.utf8
        let padding = utf8.reversed().prefix(2).prefix { $0 == UInt8(ascii: "=") }.count
        return utf8.count / 4 * 3 - padding
    }

    package var bytes: Data { Data(base64Encoded: text) ?? Data() }

    package init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard Self.isBase64(text) else { throw WireDecodingError(path: decoder.codingPath, "must be base64 (RFC 4648, padded)") }
        self.text = text
    }

    package func encode(to encoder: any Encoder) throws {
        var single = encoder.singleValueContainer()
        try single.encode(text)
    }

    /// Checks the form without decoding: whole groups of four, the base64 alphabet, padding only at the end.
    static func isBase64(_ text: String) -> Bool {
        let utf8 = Array(text.utf8)
        guard utf8.count % 4 == 0 else { return false }
        let padding = utf8.reversed().prefix(2).prefix { $0 == UInt8(ascii: "=") }.count
        return utf8.dropLast(padding).allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "+"), UInt8(ascii: "/"): true
            default: false
            }
        }
    }
}
