/// Writes JSON in the one canonical form the wire uses: no insignificant whitespace, members in
/// their stored order, only the escapes JSON requires, integers without a fraction.
public struct JSONWriter {
    public static func encode(_ value: JSONValue) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(128)
        write(value, into: &out)
        return out
    }

    public static func write(_ value: JSONValue, into out: inout [UInt8]) { emit(value, to: &out) }
    public static func writeObject(_ object: JSONObject, into out: inout [UInt8]) { emitObject(object, to: &out) }
    public static func writeInteger(_ value: Int64, into out: inout [UInt8]) { emitInteger(value, to: &out) }
    public static func writeString(_ string: String, into out: inout [UInt8]) { emitString(string, to: &out) }

    // The writers proper, for any output: an array, or a connection's outgoing bytes.

    static func emit(_ value: JSONValue, to out: inout some JSONOutput) {
        switch value {
        case .null: emitLiteral("null", to: &out)
        case .bool(let b): if b { emitLiteral("true", to: &out) } else { emitLiteral("false", to: &out) }
        case .integer(let i): emitInteger(i, to: &out)
        case .double(let d):
            if d.isFinite {
                var text = d.description
                text.withUTF8 { out.write($0) }
            } else {
                emitLiteral("null", to: &out)
            }
        case .string(let s): emitString(s, to: &out)
        case .array(let elements):
            out.write(UInt8(ascii: "["))
            for i in elements.indices {
                if i > 0 { out.write(UInt8(ascii: ",")) }
                emit(elements[i], to: &out)
            }
            out.write(UInt8(ascii: "]"))
        case .object(let object): emitObject(object, to: &out)
        }
    }

    static func emitObject(_ object: JSONObject, to out: inout some JSONOutput) {
        out.write(UInt8(ascii: "{"))
        let members = object.members
        for i in members.indices {
            if i > 0 { out.write(UInt8(ascii: ",")) }
            emitString(members[i].key, to: &out)
            out.write(UInt8(ascii: ":"))
            emit(members[i].value, to: &out)
        }
        out.write(UInt8(ascii: "}"))
    }

    static func emitInteger(_ value: Int64, to out: inout some JSONOutput) {
        // Digits from the right into a buffer on the stack, then one append: an append per digit
        // cost about as much as the rest of an envelope.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var magnitude = value.magnitude
            var start = digits.count
            repeat {
                start -= 1
                digits[start] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            if value < 0 { out.write(UInt8(ascii: "-")) }
            out.write(UnsafeBufferPointer(rebasing: digits[start...]))
        }
    }

    /// Appends the bytes of a literal (the envelope's fixed pieces).
    static func emitLiteral(_ literal: StaticString, to out: inout some JSONOutput) {
        out.write(UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    static func emitString(_ string: String, to out: inout some JSONOutput) {
        out.write(UInt8(ascii: "\""))
        // Nearly every string on the wire needs no escape: copy those in one piece.
        let copied = string.utf8.withContiguousStorageIfAvailable { bytes in
            guard !needsEscape(bytes) else { return false }
            out.write(bytes)
            return true
        }
        if copied != true { emitEscaped(string, to: &out) }
        out.write(UInt8(ascii: "\""))
    }

    /// Whether any byte is a control character, `"` or `\\`; eight bytes at a time.
    private static func needsEscape(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var index = 0
        if let base = UnsafeRawPointer(bytes.baseAddress) {
            let ones: UInt64 = 0x0101_0101_0101_0101
            while index + 8 <= bytes.count {
                let word = base.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                let quote = word ^ (ones &* 0x22), backslash = word ^ (ones &* 0x5C)
                // Exact for "is any byte one of these": each term flags a byte below 0x20 or a zero.
                let special = ((word &- ones &* 0x20) & ~word) | ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash)
                if special & (ones &* 0x80) != 0 { return true }
                index += 8
            }
        }
        while index < bytes.count {
            let b = bytes[index]
            if b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") { return true }
            index += 1
        }
        return false
    }

    private static func emitEscaped(_ string: String, to out: inout some JSONOutput) {
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): emitLiteral(#"\""#, to: &out)
            case UInt8(ascii: "\\"): emitLiteral(#"\\"#, to: &out)
            case 0x0A: emitLiteral(#"\n"#, to: &out)
            case 0x0D: emitLiteral(#"\r"#, to: &out)
            case 0x09: emitLiteral(#"\t"#, to: &out)
            case 0..<0x20:
                let hex: StaticString = "0123456789abcdef"
                emitLiteral(#"\u00"#, to: &out)
                out.write(hex.utf8Start[Int(byte >> 4)])
                out.write(hex.utf8Start[Int(byte & 0xF)])
            default: out.write(byte)
            }
        }
    }
}
