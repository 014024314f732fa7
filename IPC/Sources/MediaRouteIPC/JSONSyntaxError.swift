/// Why a frame body is not acceptable JSON, with the byte offset where reading stopped.
public struct JSONSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The bytes are not UTF-8; IPC frames must be UTF-8 before they can be JSON.
        case invalidUTF8
        case unexpectedEnd
        case unexpectedByte(UInt8)
        case invalidNumber
        case invalidEscape
        case controlCharacterInString
        case duplicateKey(String)
        case nestingTooDeep(limit: Int)
        case trailingData
    }

    public let kind: Kind
    public let offset: Int

    public var description: String {
        switch kind {
        case .invalidUTF8: "the frame is not valid UTF-8 (first bad byte at offset \(offset))"
        case .unexpectedEnd: "the JSON text ends too early (at offset \(offset))"
        case .unexpectedByte(let b):
            "unexpected \(b >= 0x20 && b < 0x7f ? "'\(Character(Unicode.Scalar(b)))'" : "byte 0x\(String(b, radix: 16))") at offset \(offset)"
        case .invalidNumber: "malformed number at offset \(offset)"
        case .invalidEscape: "malformed escape sequence in a string at offset \(offset)"
        case .controlCharacterInString: "unescaped control character in a string at offset \(offset)"
        case .duplicateKey(let key): "duplicate object key \"\(key)\" at offset \(offset)"
        case .nestingTooDeep(let limit): "JSON nested deeper than \(limit) levels at offset \(offset)"
        case .trailingData: "extra data after the JSON value at offset \(offset)"
        }
    }
}
