import MediaRouteIPC

/// Encodes `Encodable` types into the JSON values our writer sends. Members keep the order the type
/// encodes them in; `nil` optionals are left out; a `Float` travels in its shortest decimal form (a
/// volume of 0.3 arrives as 0.3, not as 0.30000001192092896).
package enum WireEncoder {
    package static func encode(_ value: some Encodable) -> JSONValue {
        if let json = value as? JSONValue { return json }
        if let object = value as? JSONObject { return .object(object) }
        let node = Node()
        // Our encoder never throws; a type's own `encode(to:)` could, which is a bug in that type.
        do { try value.encode(to: NodeEncoder(node: node, codingPath: [])) } catch {
            preconditionFailure("encoding \(type(of: value)) failed: \(error)")
        }
        return node.json
    }
}

/// What one container (or single value) wrote; resolved into a `JSONValue` at the end. Members
/// and elements live in arrays of their own (not in an enum payload) so that appending one never
/// copies the others.
private final class Node {
    enum Kind { case empty, value, object, array }
    var kind = Kind.empty
    var value = JSONValue.null
    var members: [(key: String, node: Node)] = []
    var elements: [Node] = []

    var json: JSONValue {
        switch kind {
        case .empty: .object([:])
        case .value: value
        case .object: .object(JSONObject(members.map { (key: $0.key, value: $0.node.json) }))
        case .array: .array(elements.map(\.json))
        }
    }

    /// A member's node; a key written twice keeps its last value, as coders do.
    func member(_ key: String) -> Node {
        let child = Node()
        if kind != .object { (kind, members) = (.object, []) }
        if let index = members.firstIndex(where: { $0.key == key }) { members[index].node = child } else { members.append((key, child)) }
        return child
    }

    func element() -> Node {
        let child = Node()
        if kind != .array { (kind, elements) = (.array, []) }
        elements.append(child)
        return child
    }

    func set(_ value: JSONValue) { (kind, self.value) = (.value, value) }

    func encode(_ value: some Encodable, codingPath: [any CodingKey]) throws {
        switch value {
        case let json as JSONValue: set(json)
        case let object as JSONObject: set(.object(object))
        case let float as Float: set(.double(Double(float.description) ?? Double(float)))
        default: try value.encode(to: NodeEncoder(node: self, codingPath: codingPath))
        }
    }
}

private struct NodeEncoder: Encoder {
    let node: Node
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if node.kind != .object { (node.kind, node.members) = (.object, []) }
        return KeyedEncodingContainer(KeyedContainer<Key>(node: node, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if node.kind != .array { (node.kind, node.elements) = (.array, []) }
        return UnkeyedContainer(node: node, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { SingleValue(node: node, codingPath: codingPath) }
}

private struct SingleValue: SingleValueEncodingContainer {
    let node: Node
    let codingPath: [any CodingKey]

    mutating func encodeNil() { node.set(.null) }
    mutating func encode(_ value: Bool) { node.set(.bool(value)) }
    mutating func encode(_ value: String) { node.set(.string(value)) }
    mutating func encode(_ value: Double) { node.set(.double(value)) }
    mutating func encode(_ value: Float) { node.set(.double(Double(value.description) ?? Double(value))) }
    mutating func encode(_ value: Int) { node.set(.integer(Int64(value))) }
    mutating func encode(_ value: Int8) { node.set(.integer(Int64(value))) }
    mutating func encode(_ value: Int16) { node.set(.integer(Int64(value))) }
    mutating func encode(_ value: Int32) { node.set(.integer(Int64(value))) }
    mutating func encode(_ value: Int64) { node.set(.integer(value)) }
    mutating func encode(_ value: UInt) { node.set(.integer(Int64(value))) }
    mutating func encode(_ value: UInt8) { node.set(.integer(Int64(value))) }
    mutating func encode(_ value: UInt16) { node.set(.integer(Int64(value))) }
    mutating func encode(_ value: UInt32) { node.set(.integer(Int64(value))) }
    mutating func encode(_ value: UInt64) { node.set(.integer(Int64(clamping: value))) }
    mutating func encode<T: Encodable>(_ value: T) throws { try node.encode(value, codingPath: codingPath) }
}

private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: Node
    let codingPath: [any CodingKey]

    mutating func encodeNil(forKey key: Key) { node.member(key.stringValue).set(.null) }
    mutating func encode(_ value: Bool, forKey key: Key) { var single = SingleValue(node: node.member(key.stringValue), codingPath: codingPath); single.encode(value) }
    mutating func encode(_ value: String, forKey key: Key) { var single = SingleValue(node: node.member(key.stringValue), codingPath: codingPath); single.encode(value) }
    mutating func encode(_ value: Double, forKey key: Key) { var single = SingleValue(node: node.member(key.stringValue), codingPath: codingPath); single.encode(value) }
    mutating func encode(_ value: Float, forKey key: Key) { var single = SingleValue(node: node.member(key.stringValue), codingPath: codingPath); single.encode(value) }
    mutating func encode(_ value: Int, forKey key: Key) { var single = SingleValue(node: node.member(key.stringValue), codingPath: codingPath); single.encode(value) }
    mutating func encode(_ value: Int8, forKey key: Key) { var single = SingleValue(node: node.member(key.stringValue), codingPath: codingPath); single.encode(value) }
    mutating func encode(_ value: Int16, forKey key: Key) { var single = SingleValue(node: node.member(key.stringValue), codingPath: codingPath); single.encode(value) }
    mutating func encode(_ value: Int32, forKey key: Key) { var single = SingleValue(node: node.member(key.stringValue), codingPath: codingPath); single.encode(value) }
    mutating func encode(_ value: Int64, forKey key: Key) { var single = SingleValue(node: node.member(key.stringValue), codingPath: codingPath); single.encode(value) }
    mutating func encode(_ value: UInt, forKey key: Key) { var single = SingleValue(node: node.member(key.stringValue), codingPath: codingPath); single.encode(value) }
    mutating func encode(_ value: UInt8, forKey key: Key) { var single = SingleValue(node: node.member(key.stringValue), codingPath: codingPath); single.encode(value) }
    mutating func encode(_ value: UInt16, forKey key: Key) { var single = SingleValue(node: node.member(key.stringValue), codingPath: codingPath); single.encode(value) }
    mutating func encode(_ value: UInt32, forKey key: Key) { var single = SingleValue(node: node.member(key.stringValue), codingPath: codingPath); single.encode(value) }
    mutating func encode(_ value: UInt64, forKey key: Key) { var single = SingleValue(node: node.member(key.stringValue), codingPath: codingPath); single.encode(value) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try node.member(key.stringValue).encode(value, codingPath: codingPath + [key])
    }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        NodeEncoder(node: node.member(key.stringValue), codingPath: codingPath + [key]).container(keyedBy: keyType)
    }
    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        NodeEncoder(node: node.member(key.stringValue), codingPath: codingPath + [key]).unkeyedContainer()
    }
    mutating func superEncoder() -> any Encoder { NodeEncoder(node: node, codingPath: codingPath) }
    mutating func superEncoder(forKey key: Key) -> any Encoder { NodeEncoder(node: node.member(key.stringValue), codingPath: codingPath + [key]) }
}

private struct UnkeyedContainer: UnkeyedEncodingContainer {
    let node: Node
    let codingPath: [any CodingKey]
    var count: Int { node.kind == .array ? node.elements.count : 0 }

    mutating func encodeNil() { node.element().set(.null) }
    mutating func encode(_ value: Bool) { var single = SingleValue(node: node.element(), codingPath: codingPath); single.encode(value) }
    mutating func encode(_ value: String) { var single = SingleValue(node: node.element(), codingPath: codingPath); single.encode(value) }
    mutating func encode(_ value: Double) { var single = SingleValue(node: node.element(), codingPath: codingPath); single.encode(value) }
    mutating func encode(_ value: Float) { var single = SingleValue(node: node.element(), codingPath: codingPath); single.encode(value) }
    mutating func encode(_ value: Int) { var single = SingleValue(node: node.element(), codingPath: codingPath); single.encode(value) }
    mutating func encode(_ value: Int8) { var single = SingleValue(node: node.element(), codingPath: codingPath); single.encode(value) }
    mutating func encode(_ value: Int16) { var single = SingleValue(node: node.element(), codingPath: codingPath); single.encode(value) }
    mutating func encode(_ value: Int32) { var single = SingleValue(node: node.element(), codingPath: codingPath); single.encode(value) }
    mutating func encode(_ value: Int64) { var single = SingleValue(node: node.element(), codingPath: codingPath); single.encode(value) }
    mutating func encode(_ value: UInt) { var single = SingleValue(node: node.element(), codingPath: codingPath); single.encode(value) }
    mutating func encode(_ value: UInt8) { var single = SingleValue(node: node.element(), codingPath: codingPath); single.encode(value) }
    mutating func encode(_ value: UInt16) { var single = SingleValue(node: node.element(), codingPath: codingPath); single.encode(value) }
    mutating func encode(_ value: UInt32) { var single = SingleValue(node: node.element(), codingPath: codingPath); single.encode(value) }
    mutating func encode(_ value: UInt64) { var single = SingleValue(node: node.element(), codingPath: codingPath); single.encode(value) }
    mutating func encode<T: Encodable>(_ value: T) throws { try node.element().encode(value, codingPath: codingPath) }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        NodeEncoder(node: node.element(), codingPath: codingPath).container(keyedBy: keyType)
    }
    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { NodeEncoder(node: node.element(), codingPath: codingPath).unkeyedContainer() }
    mutating func superEncoder() -> any Encoder { NodeEncoder(node: node.element(), codingPath: codingPath) }
}
