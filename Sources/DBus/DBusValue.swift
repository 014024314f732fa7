/// One D-Bus value with its type. Containers carry their element signatures, so an empty array
/// still says what it would hold.
public indirect enum DBusValue: Sendable, Equatable {
    case byte(UInt8)
    case boolean(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(DBusObjectPath)
    case signature(DBusSignature)
    /// Equal by identity: two descriptors are the same only if they are the same object.
    case fileDescriptor(DBusFileDescriptor)
    /// Element signature, elements.
    case array(DBusSignature, [DBusValue])
    case dictionary(key: DBusSignature, value: DBusSignature, [DBusDictionaryEntry])
    case structure([DBusValue])
    case variant(DBusValue)

    public var signature: DBusSignature {
        switch self {
        case .byte: "y"
        case .boolean: "b"
        case .int16: "n"
        case .uint16: "q"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .fileDescriptor: "h"
        case .array(let element, _): DBusSignature("a" + element.rawValue)
        case .dictionary(let key, let value, _): DBusSignature("a{" + key.rawValue + value.rawValue + "}")
        case .structure(let members): DBusSignature("(" + members.map(\.signature.rawValue).joined() + ")")
        case .variant: "v"
        }
    }

    public static func == (a: DBusValue, b: DBusValue) -> Bool {
        switch (a, b) {
        case (.byte(let x), .byte(let y)): x == y
        case (.boolean(let x), .boolean(let y)): x == y
        case (.int16(let x), .int16(let y)): x == y
        case (.uint16(let x), .uint16(let y)): x == y
        case (.int32(let x), .int32(let y)): x == y
        case (.uint32(let x), .uint32(let y)): x == y
        case (.int64(let x), .int64(let y)): x == y
        case (.uint64(let x), .uint64(let y)): x == y
        case (.double(let x), .double(let y)): x == y
        case (.string(let x), .string(let y)): x == y
        case (.objectPath(let x), .objectPath(let y)): x == y
        case (.signature(let x), .signature(let y)): x == y
        case (.fileDescriptor(let x), .fileDescriptor(let y)): x === y
        case (.array(let s, let x), .array(let t, let y)): s == t && x == y
        case (.dictionary(let k, let v, let x), .dictionary(let l, let w, let y)): k == l && v == w && x == y
        case (.structure(let x), .structure(let y)): x == y
        case (.variant(let x), .variant(let y)): x == y
        default: false
        }
    }
}

/// One entry of a D-Bus dictionary (`{kv}`), in the order it travels.
public struct DBusDictionaryEntry: Sendable, Equatable {
    public var key: DBusValue
    public var value: DBusValue
    public init(_ key: DBusValue, _ value: DBusValue) {
        self.key = key
        self.value = value
    }
}
