/// Strings and object keys: nearly all of a message's bytes, so the plain case (no escape) is
/// found a word at a time and handed over in place.
extension JSONReader {
    /// An object key as read: the bytes between its quotes when it has no escape (nearly always),
    /// so a reader looking for a few known keys need not make a `String` of each.
    enum Key {
        case plain(UnsafeBufferPointer<UInt8>)
        case unescaped(String)

        var string: String {
            switch self {
            case .plain(let bytes): String(decoding: bytes, as: UTF8.self)
            case .unescaped(let string): string
            }
        }
    }

    /// A key: its bytes in place when it has no escape, else the string it spells.
    mutating func readKey() throws(JSONSyntaxError) -> Key {
        let start = index + 1
        index = Self.endOfPlainRun(bytes, from: start)
        if index < bytes.count, bytes[index] == UInt8(ascii: "\"") {
            index += 1
            return .plain(UnsafeBufferPointer(rebasing: bytes[start..<(index - 1)]))
        }
        return .unescaped(try readStringRest(from: start))
    }

    mutating func readString() throws(JSONSyntaxError) -> String {
        // Fast path: no escapes, which is nearly every string on the wire.
        let start = index + 1  // after the opening quote
        index = Self.endOfPlainRun(bytes, from: start)
        if index < bytes.count, bytes[index] == UInt8(ascii: "\"") {
            index += 1
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<(index - 1)]), as: UTF8.self)
        }
        return try readStringRest(from: start)
    }

    /// The first offset from `start` holding a quote, a backslash or a control character (or the
    /// end): what ends a string or needs a closer look. Eight bytes at a time while none is there.
    private static func endOfPlainRun(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        var index = start
        if let base = UnsafeRawPointer(bytes.baseAddress) {
            let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
            while index + 8 <= bytes.count {
                let word = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: index, as: UInt64.self))
                // A byte below 0x20, or equal to '"' or '\\' once xored to zero, sets its high bit here.
                // Borrows may flag bytes above it too, never below: the lowest flag is exact.
                let control = (word &- ones &* 0x20) & ~word
                let quote = word ^ (ones &* 0x22), backslash = word ^ (ones &* 0x5C)
                let special = (control | ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash)) & highs
                if special != 0 { return index + special.trailingZeroBitCount / 8 }
                index += 8
            }
        }
        while index < bytes.count {
            let b = bytes[index]
            if b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") || b < 0x20 { break }
            index += 1
        }
        return index
    }

    /// The rest of a string from `index`, the first byte of `start...` that is not plain.
    private mutating func readStringRest(from start: Int) throws(JSONSyntaxError) -> String {
        guard index < bytes.count else { throw error(.unexpectedEnd) }
        var utf8 = Array(UnsafeBufferPointer(rebasing: bytes[start..<index]))
        while true {
            guard index < bytes.count else { throw error(.unexpectedEnd) }
            let b = bytes[index]
            switch b {
            case UInt8(ascii: "\""):
                index += 1
                return String(decoding: utf8, as: UTF8.self)
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw error(.unexpectedEnd) }
                let e = bytes[index]
                index += 1
                switch e {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(e)
                case UInt8(ascii: "b"): utf8.append(0x08)
                case UInt8(ascii: "f"): utf8.append(0x0C)
                case UInt8(ascii: "n"): utf8.append(0x0A)
                case UInt8(ascii: "r"): utf8.append(0x0D)
                case UInt8(ascii: "t"): utf8.append(0x09)
                case UInt8(ascii: "u"): utf8.append(contentsOf: try readUnicodeEscape())
                default:
                    index -= 2
                    throw error(.invalidEscape)
                }
            case 0..<0x20: throw error(.controlCharacterInString)
            default:
                utf8.append(b)
                index += 1
            }
        }
    }

    /// Reads the hex digits after `\u` (and a following `\uDCxx` for a surrogate pair).
    private mutating func readUnicodeEscape() throws(JSONSyntaxError) -> String.UTF8View {
        let escapeStart = index - 2
        let high = try readHex4()
        var scalarValue = UInt32(high)
        if (0xD800..<0xDC00).contains(high) {
            guard index + 6 <= bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
            else { throw JSONSyntaxError(kind: .invalidEscape, offset: escapeStart) }
            index += 2
            let low = try readHex4()
            guard (0xDC00..<0xE000).contains(low) else { throw JSONSyntaxError(kind: .invalidEscape, offset: escapeStart) }
            scalarValue = 0x10000 + ((UInt32(high) - 0xD800) << 10) + (UInt32(low) - 0xDC00)
        } else if (0xDC00..<0xE000).contains(high) {
            throw JSONSyntaxError(kind: .invalidEscape, offset: escapeStart)
        }
        guard let scalar = Unicode.Scalar(scalarValue) else { throw JSONSyntaxError(kind: .invalidEscape, offset: escapeStart) }
        return String(Character(scalar)).utf8
    }

    private mutating func readHex4() throws(JSONSyntaxError) -> UInt16 {
        guard index + 4 <= bytes.count else { throw error(.unexpectedEnd) }
        var value: UInt16 = 0
        for _ in 0..<4 {
            let b = bytes[index]
            let digit: UInt8
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = b - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = b - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = b - UInt8(ascii: "A") + 10
            default: throw error(.invalidEscape)
            }
            value = value << 4 | UInt16(digit)
            index += 1
        }
        return value
    }
}
