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

    // Internal, not private: the string reading is in JSONReader+Strings.swift.
    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0

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

    /// Consumes `literal` if the text continues with exactly its bytes.
    mutating func skip(_ literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount, start = literal.utf8Start
        guard index + count <= bytes.count else { return false }
        for i in 0..<count where bytes[index + i] != start[i] { return false }
        index += count
        return true
    }

    /// The next byte, if any, without consuming it.
    var next: UInt8? { index < bytes.count ? bytes[index] : nil }

    func error(_ kind: JSONSyntaxError.Kind) -> JSONSyntaxError {
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
        try readMemberKeys(depth: depth) { reader, key, keyOffset throws(JSONSyntaxError) in
            let key = key.string
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
        try readMemberKeys(depth: depth) { reader, key, keyOffset throws(JSONSyntaxError) in try member(&reader, key.string, keyOffset) }
    }

    /// `readMembers`, with each key as it was read.
    mutating func readMemberKeys(depth: Int, _ member: (inout JSONReader, _ key: Key, _ keyOffset: Int) throws(JSONSyntaxError) -> Void) throws(JSONSyntaxError) {
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
            let key = try readKey()
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

    private mutating func readNumber() throws(JSONSyntaxError) -> JSONValue {
        // Scanned with a local index, stored back before every return and throw (errors name it).
        let start = index, count = bytes.count
        var i = index
        var negative = false
        if bytes[i] == UInt8(ascii: "-") {
            negative = true
            i += 1
        }
        let integerStart = i
        guard i < count, isDigit(bytes[i]) else { index = i; throw error(.invalidNumber) }
        var magnitude: Int64 = 0
        if bytes[i] == UInt8(ascii: "0") {
            i += 1
            if i < count, isDigit(bytes[i]) { index = i; throw error(.invalidNumber) }  // no leading zeros
        } else {
            // Accumulated while scanning; only the first 18 digits are used (no overflow), and only
            // when there are no more.
            while i < count, isDigit(bytes[i]) {
                if i - integerStart < 18 { magnitude = magnitude &* 10 &+ Int64(bytes[i] &- UInt8(ascii: "0")) }
                i += 1
            }
        }
        var isInteger = true
        if i < count, bytes[i] == UInt8(ascii: ".") {
            isInteger = false
            i += 1
            guard i < count, isDigit(bytes[i]) else { index = i; throw error(.invalidNumber) }
            while i < count, isDigit(bytes[i]) { i += 1 }
        }
        if i < count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            isInteger = false
            i += 1
            if i < count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            guard i < count, isDigit(bytes[i]) else { index = i; throw error(.invalidNumber) }
            while i < count, isDigit(bytes[i]) { i += 1 }
        }
        index = i
        if isInteger, index - integerStart <= 18 {
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
