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

/// A strict RFC 8259 reader: one value, UTF-8 only, no duplicate keys, bounded nesting.
///
/// Hand-written rather than Foundation's because IPC needs member order preserved, exact
/// integers, and a round trip measured in hundreds of nanoseconds, not microseconds.
public struct JSONReader {
    /// Deep enough for any real message, shallow enough that hostile input cannot exhaust the stack.
    public static let maximumDepth = 64

    public static func parse(_ bytes: some Collection<UInt8>) throws(JSONSyntaxError) -> JSONValue {
        try withContiguousBytes(bytes) { buffer throws(JSONSyntaxError) in try parse(buffer) }
    }

    public static func parse(_ buffer: UnsafeBufferPointer<UInt8>) throws(JSONSyntaxError) -> JSONValue {
        var reader = try JSONReader(validating: buffer)
        let value = try reader.readValue(depth: 0)
        try reader.expectEnd()
        return value
    }

    /// Runs `body` on the bytes in place when they are contiguous, else on a copy.
    static func withContiguousBytes<R, E: Error>(_ bytes: some Collection<UInt8>,
                                                 _ body: (UnsafeBufferPointer<UInt8>) throws(E) -> R) throws(E) -> R {
        let result: Result<R, E>? = bytes.withContiguousStorageIfAvailable { buffer in
            Result { () throws(E) in try body(buffer) }
        }
        if let result { return try result.get() }
        return try Array(bytes).withUnsafeBufferPointer { buffer throws(E) in try body(buffer) }
    }

    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0

    /// A reader at the first value of `bytes`, which must be UTF-8 throughout.
    init(validating bytes: UnsafeBufferPointer<UInt8>) throws(JSONSyntaxError) {
        if let bad = Self.firstInvalidUTF8Offset(bytes) { throw JSONSyntaxError(kind: .invalidUTF8, offset: bad) }
        self.bytes = bytes
        skipWhitespace()
    }

    /// After the one value of the text: only whitespace may follow.
    mutating func expectEnd() throws(JSONSyntaxError) {
        skipWhitespace()
        if index != bytes.count { throw error(.trailingData) }
    }

    /// The next byte, if any, without consuming it.
    var next: UInt8? { index < bytes.count ? bytes[index] : nil }

    private func error(_ kind: JSONSyntaxError.Kind) -> JSONSyntaxError {
        JSONSyntaxError(kind: kind, offset: index)
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private func peek() throws(JSONSyntaxError) -> UInt8 {
        guard index < bytes.count else { throw error(.unexpectedEnd) }
        return bytes[index]
    }

    private mutating func expect(_ literal: StaticString, _ value: JSONValue) throws(JSONSyntaxError) -> JSONValue {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw JSONSyntaxError(kind: .unexpectedEnd, offset: bytes.count) }
        let start = literal.utf8Start
        for i in 0..<count where bytes[index + i] != start[i] {
            index += i
            throw error(.unexpectedByte(bytes[index]))
        }
        index += count
        return value
    }

    mutating func readValue(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        switch try peek() {
        case UInt8(ascii: "{"): return try readObject(depth: depth + 1)
        case UInt8(ascii: "["): return try readArray(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try readString())
        case UInt8(ascii: "t"): return try expect("true", .bool(true))
        case UInt8(ascii: "f"): return try expect("false", .bool(false))
        case UInt8(ascii: "n"): return try expect("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try readNumber()
        case let other: throw error(.unexpectedByte(other))
        }
    }

    private mutating func readObject(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = []
        var seen: Set<String>? = nil  // only built for large objects; small ones scan
        try readMembers(depth: depth) { reader, key, keyOffset throws(JSONSyntaxError) in
            if members.isEmpty {
                members.reserveCapacity(8)  // one allocation for the objects IPC sends, not three
            } else if members.count >= 16 {
                if seen == nil { seen = Set(members.map(\.key)) }
                if !seen!.insert(key).inserted { throw JSONSyntaxError(kind: .duplicateKey(key), offset: keyOffset) }
            } else if members.contains(where: { $0.key == key }) {
                throw JSONSyntaxError(kind: .duplicateKey(key), offset: keyOffset)
            }
            members.append((key: key, value: try reader.readValue(depth: depth)))
        }
        return .object(JSONObject(members))
    }

    /// Reads an object from its `{` to its `}`, handing each key to `member`, which must read the
    /// value (or throw, given the key's offset, to refuse the key).
    mutating func readMembers(depth: Int, _ member: (inout JSONReader, _ key: String, _ keyOffset: Int) throws(JSONSyntaxError) -> Void) throws(JSONSyntaxError) {
        if depth > Self.maximumDepth { throw error(.nestingTooDeep(limit: Self.maximumDepth)) }
        index += 1
        skipWhitespace()
        if try peek() == UInt8(ascii: "}") {
            index += 1
            return
        }
        while true {
            skipWhitespace()
            guard try peek() == UInt8(ascii: "\"") else { throw error(.unexpectedByte(bytes[index])) }
            let keyOffset = index
            let key = try readString()
            skipWhitespace()
            guard try peek() == UInt8(ascii: ":") else { throw error(.unexpectedByte(bytes[index])) }
            index += 1
            skipWhitespace()
            try member(&self, key, keyOffset)
            skipWhitespace()
            switch try peek() {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"):
                index += 1
                return
            case let other: throw error(.unexpectedByte(other))
            }
        }
    }

    private mutating func readArray(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        if depth > Self.maximumDepth { throw error(.nestingTooDeep(limit: Self.maximumDepth)) }
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if try peek() == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try readValue(depth: depth))
            skipWhitespace()
            switch try peek() {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"):
                index += 1
                return .array(elements)
            case let other: throw error(.unexpectedByte(other))
            }
        }
    }

    private mutating func readString() throws(JSONSyntaxError) -> String {
        index += 1  // opening quote
        let start = index
        // Fast path: no escapes, which is nearly every string on the wire.
        while index < bytes.count {
            let b = bytes[index]
            if b == UInt8(ascii: "\"") {
                let s = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
                index += 1
                return s
            }
            if b == UInt8(ascii: "\\") { break }
            if b < 0x20 { throw error(.controlCharacterInString) }
            index += 1
        }
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

    private mutating func readNumber() throws(JSONSyntaxError) -> JSONValue {
        let start = index
        var negative = false
        if bytes[index] == UInt8(ascii: "-") {
            negative = true
            index += 1
        }
        let integerStart = index
        guard index < bytes.count, isDigit(bytes[index]) else { throw error(.invalidNumber) }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < bytes.count, isDigit(bytes[index]) { throw error(.invalidNumber) }  // no leading zeros
        } else {
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        var isInteger = true
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw error(.invalidNumber) }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { throw error(.invalidNumber) }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if isInteger, index - integerStart <= 18 {
            var magnitude: Int64 = 0
            for i in integerStart..<index { magnitude = magnitude * 10 + Int64(bytes[i] - UInt8(ascii: "0")) }
            return .integer(negative ? -magnitude : magnitude)
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        if isInteger, let exact = Int64(text) { return .integer(exact) }
        guard let d = Double(text), d.isFinite else { throw JSONSyntaxError(kind: .invalidNumber, offset: start) }
        return .double(d)
    }

    private func isDigit(_ b: UInt8) -> Bool { b &- UInt8(ascii: "0") < 10 }

    /// The offset of the first byte that breaks UTF-8, or nil if the buffer is valid.
    private static func firstInvalidUTF8Offset(_ buffer: UnsafeBufferPointer<UInt8>) -> Int? {
        // Pure ASCII is the common case and needs no decoder: eight bytes at a time.
        var start = 0
        if let base = UnsafeRawPointer(buffer.baseAddress) {
            while start + 8 <= buffer.count, base.loadUnaligned(fromByteOffset: start, as: UInt64.self) & 0x8080_8080_8080_8080 == 0 {
                start += 8
            }
        }
        guard buffer[start...].contains(where: { $0 >= 0x80 }) else { return nil }
        // Every byte before `start` is ASCII, so a character starts there.
        var offset = start
        var iterator = buffer[start...].makeIterator()
        var decoder = UTF8()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar): offset += UTF8.width(scalar)
            case .emptyInput: return nil
            case .error: return offset
            }
        }
    }
}
