/// Typed reads of values that arrived: nil when the value is of another type. Each looks through
/// one level of `.variant`, since properties and `a{sv}` members arrive wrapped in one.
extension DBusValue {
    private var unwrapped: DBusValue { if case .variant(let inner) = self { inner } else { self } }

    public var string: String? { if case .string(let value) = unwrapped { value } else { nil } }
    public var objectPath: DBusObjectPath? { if case .objectPath(let value) = unwrapped { value } else { nil } }
    public var bool: Bool? { if case .boolean(let value) = unwrapped { value } else { nil } }
    public var uint8: UInt8? { if case .byte(let value) = unwrapped { value } else { nil } }
    public var int16: Int16? { if case .int16(let value) = unwrapped { value } else { nil } }
    public var uint16: UInt16? { if case .uint16(let value) = unwrapped { value } else { nil } }
    public var int32: Int32? { if case .int32(let value) = unwrapped { value } else { nil } }
    public var uint32: UInt32? { if case .uint32(let value) = unwrapped { value } else { nil } }
    public var int64: Int64? { if case .int64(let value) = unwrapped { value } else { nil } }
    public var uint64: UInt64? { if case .uint64(let value) = unwrapped { value } else { nil } }
    public var double: Double? { if case .double(let value) = unwrapped { value } else { nil } }
    public var fileDescriptor: DBusFileDescriptor? { if case .fileDescriptor(let value) = unwrapped { value } else { nil } }

    /// The elements of an array.
    public var array: [DBusValue]? { if case .array(_, let elements) = unwrapped { elements } else { nil } }
    /// An `ay`.
    public var bytes: [UInt8]? {
        guard case .array(let element, let elements) = unwrapped, element == "y" else { return nil }
        return elements.compactMap(\.uint8)
    }
    /// An `as` (or `ao`, read as text).
    public var strings: [String]? {
        guard case .array(_, let elements) = unwrapped else { return nil }
        let strings = elements.compactMap { $0.string ?? $0.objectPath?.rawValue }
        return strings.count == elements.count ? strings : nil
    }
    /// A dictionary with string keys (an `a{sv}` above all) as key -> value, variants unwrapped one level.
    public var properties: [String: DBusValue]? {
        guard case .dictionary(_, _, let entries) = unwrapped else { return nil }
        var result: [String: DBusValue] = [:]
        for entry in entries {
            guard let key = entry.key.string ?? entry.key.objectPath?.rawValue else { return nil }
            result[key] = entry.value.unwrapped
        }
        return result
    }
    /// A dictionary as (key, value) pairs.
    public var entries: [DBusDictionaryEntry]? { if case .dictionary(_, _, let entries) = unwrapped { entries } else { nil } }

    /// An `a{sv}`, sorted by key so the same members always travel the same way.
    public static func properties(_ members: [String: DBusValue]) -> DBusValue {
        .dictionary(key: "s", value: "v", members.sorted { $0.key < $1.key }.map { DBusDictionaryEntry(.string($0.key), .variant($0.value)) })
    }
    public static func bytes(_ bytes: [UInt8]) -> DBusValue { .array("y", bytes.map(DBusValue.byte)) }
    public static func strings(_ strings: [String]) -> DBusValue { .array("s", strings.map(DBusValue.string)) }
}
