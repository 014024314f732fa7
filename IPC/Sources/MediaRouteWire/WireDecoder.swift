import MediaRouteIPC

/// Why a wire value is not the message it should be: names the member (as a dotted path) and what
/// was wrong with it, so a driver author reads "device.capabilities: expected an array, got a string".
package struct WireDecodingError: Error, Sendable, CustomStringConvertible {
    package let path: String
    package let problem: String

    package init(path: [any CodingKey], _ problem: String) {
        self.path = path.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".").replacingOccurrences(of: ".[", with: "[")
        self.problem = problem
    }

    package var description: String { path.isEmpty ? problem : "\"\(path)\": \(problem)" }
}

/// Decodes `Decodable` types from the JSON values our reader produces.
///
/// Codable over `JSONValue` rather than hand-written readers: each message's members are named once,
/// by its Swift properties, and checked by the compiler wherever the message is built or read. The
/// envelope (jsonrpc/id/method) keeps its own fast path in `MediaRouteIPC`; only params and results
/// pass through here. `JSONValue` and `JSONObject` members pass through untouched.
package enum WireDecoder {
    package static func decode<T: Decodable>(_ type: T.Type, from value: JSONValue) throws(WireDecodingError) -> T {
        do {
            return try ValueDecoder(value: value, codingPath: []).decodeValue(T.self)
        } catch let error as WireDecodingError {
            throw error
        } catch let DecodingError.dataCorrupted(context) {
            throw WireDecodingError(path: context.codingPath, context.debugDescription)
        } catch {
            throw WireDecodingError(path: [], "\(error)")
        }
    }
}

private struct ValueDecoder: Decoder {
    let value: JSONValue
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func failure(_ expected: String) -> WireDecodingError {
        WireDecodingError(path: codingPath, "expected \(expected), got \(value.kindName)")
    }

    func decodeValue<T: Decodable>(_ type: T.Type) throws -> T {
        if T.self == JSONValue.self { return value as! T }
        if T.self == JSONObject.self {
            guard case .object(let object) = value else { throw failure("an object") }
            return object as! T
        }
        return try T(from: self)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let object) = value else { throw failure("an object") }
        return KeyedDecodingContainer(KeyedContainer<Key>(object: object, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let elements) = value else { throw failure("an array") }
        return UnkeyedContainer(elements: elements, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { SingleValue(decoder: self) }
}

private struct SingleValue: SingleValueDecodingContainer {
    let decoder: ValueDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }

    func decodeNil() -> Bool { decoder.value == .null }
    func decode(_ type: Bool.Type) throws -> Bool {
        guard case .bool(let b) = decoder.value else { throw decoder.failure("true or false") }
        return b
    }
    func decode(_ type: String.Type) throws -> String {
        guard case .string(let s) = decoder.value else { throw decoder.failure("a string") }
        return s
    }
    func decode(_ type: Double.Type) throws -> Double {
        guard let d = decoder.value.doubleValue else { throw decoder.failure("a number") }
        return d
    }
    func decode(_ type: Float.Type) throws -> Float { Float(try decode(Double.self)) }
    func integer<I: FixedWidthInteger>(_ type: I.Type) throws -> I {
        guard let n = decoder.value.integerValue else { throw decoder.failure("an integer") }
        guard let exact = I(exactly: n) else { throw WireDecodingError(path: codingPath, "\(n) is out of range") }
        return exact
    }
    func decode(_ type: Int.Type) throws -> Int { try integer(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try integer(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try integer(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try integer(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try integer(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try integer(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(type) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try decoder.decodeValue(type) }
}

private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let object: JSONObject
    let codingPath: [any CodingKey]

    var allKeys: [Key] { object.keys.compactMap(Key.init(stringValue:)) }
    func contains(_ key: Key) -> Bool { object[key.stringValue] != nil }

    func child(_ key: Key) throws -> ValueDecoder {
        guard let value = object[key.stringValue] else {
            throw WireDecodingError(path: codingPath + [key], "missing")
        }
        return ValueDecoder(value: value, codingPath: codingPath + [key])
    }

    func decodeNil(forKey key: Key) throws -> Bool { (object[key.stringValue] ?? .null) == .null }

    /// A member read in place: the coding path (an allocation per member) is built only for an error.
    private func primitive<T>(_ key: Key, _ read: (JSONValue) -> T?, _ expected: String) throws -> T {
        guard let value = object[key.stringValue] else { throw WireDecodingError(path: codingPath + [key], "missing") }
        guard let result = read(value) else { throw WireDecodingError(path: codingPath + [key], "expected \(expected), got \(value.kindName)") }
        return result
    }

    private func presentPrimitive<T>(_ key: Key, _ read: (JSONValue) -> T?, _ expected: String) throws -> T? {
        guard let value = object[key.stringValue], value != .null else { return nil }
        guard let result = read(value) else { throw WireDecodingError(path: codingPath + [key], "expected \(expected), got \(value.kindName)") }
        return result
    }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try primitive(key, \.boolValue, "true or false") }
    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try presentPrimitive(key, \.boolValue, "true or false") }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try primitive(key, \.stringValue, "a string") }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try presentPrimitive(key, \.stringValue, "a string") }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try primitive(key, \.doubleValue, "a number") }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try presentPrimitive(key, \.doubleValue, "a number") }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try SingleValue(decoder: child(key)).decode(type) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try SingleValue(decoder: child(key)).decode(type) }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? {
        guard let value = object[key.stringValue], value != .null else { return nil }
        return try SingleValue(decoder: ValueDecoder(value: value, codingPath: codingPath + [key])).decode(type)
    }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try SingleValue(decoder: child(key)).decode(type) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try SingleValue(decoder: child(key)).decode(type) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try SingleValue(decoder: child(key)).decode(type) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try SingleValue(decoder: child(key)).decode(type) }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? {
        guard let value = object[key.stringValue], value != .null else { return nil }
        return try SingleValue(decoder: ValueDecoder(value: value, codingPath: codingPath + [key])).decode(type)
    }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try SingleValue(decoder: child(key)).decode(type) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try SingleValue(decoder: child(key)).decode(type) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try SingleValue(decoder: child(key)).decode(type) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try SingleValue(decoder: child(key)).decode(type) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try SingleValue(decoder: child(key)).decode(type) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try child(key).decodeValue(type) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try child(key).container(keyedBy: type)
    }
    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { try child(key).unkeyedContainer() }
    func superDecoder() throws -> any Decoder { ValueDecoder(value: .object(object), codingPath: codingPath) }
    func superDecoder(forKey key: Key) throws -> any Decoder { try child(key) }
}

private struct UnkeyedContainer: UnkeyedDecodingContainer {
    let elements: [JSONValue]
    let codingPath: [any CodingKey]
    var currentIndex = 0
    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    struct Index: CodingKey {
        let intValue: Int?
        var stringValue: String { "\(intValue ?? 0)" }
        init(_ index: Int) { intValue = index }
        init?(stringValue: String) { nil }
        init?(intValue: Int) { self.intValue = intValue }
    }

    mutating func next() throws -> ValueDecoder {
        guard !isAtEnd else { throw WireDecodingError(path: codingPath + [Index(currentIndex)], "missing (the array is too short)") }
        defer { currentIndex += 1 }
        return ValueDecoder(value: elements[currentIndex], codingPath: codingPath + [Index(currentIndex)])
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, elements[currentIndex] == .null else { return false }
        currentIndex += 1
        return true
    }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next().decodeValue(type) }
    mutating func decode(_ type: Bool.Type) throws -> Bool { try SingleValue(decoder: next()).decode(type) }
    mutating func decode(_ type: String.Type) throws -> String { try SingleValue(decoder: next()).decode(type) }
    mutating func decode(_ type: Double.Type) throws -> Double { try SingleValue(decoder: next()).decode(type) }
    mutating func decode(_ type: Float.Type) throws -> Float { try SingleValue(decoder: next()).decode(type) }
    mutating func decode(_ type: Int.Type) throws -> Int { try SingleValue(decoder: next()).decode(type) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try SingleValue(decoder: next()).decode(type) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try SingleValue(decoder: next()).decode(type) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try SingleValue(decoder: next()).decode(type) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try SingleValue(decoder: next()).decode(type) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try SingleValue(decoder: next()).decode(type) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try SingleValue(decoder: next()).decode(type) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try SingleValue(decoder: next()).decode(type) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try SingleValue(decoder: next()).decode(type) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try SingleValue(decoder: next()).decode(type) }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try next().container(keyedBy: type)
    }
    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { try next().unkeyedContainer() }
    mutating func superDecoder() throws -> any Decoder { try next() }
}
