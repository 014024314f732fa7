import CDBus

/// Reads a libdbus message's arguments into values. libdbus checked the message's wire form when
/// it arrived, so what is left to refuse is only what we cannot represent.
enum MessageReader {
    static func arguments(of message: OpaquePointer) -> [DBusValue] {
        var iterator = DBusMessageIter()
        guard dbus_message_iter_init(message, &iterator) != 0 else { return [] }
        var values: [DBusValue] = []
        repeat {
            guard let value = read(&iterator) else { break }
            values.append(value)
        } while dbus_message_iter_next(&iterator) != 0
        return values
    }

    private static func read(_ iterator: inout DBusMessageIter) -> DBusValue? {
        func basic<T: BitwiseCopyable>(_ initial: T) -> T {
            var value = initial
            dbus_message_iter_get_basic(&iterator, &value)
            return value
        }
        func text() -> String {
            var pointer: UnsafePointer<CChar>?
            dbus_message_iter_get_basic(&iterator, &pointer)
            return pointer.map { String(cString: $0) } ?? ""
        }
        switch dbus_message_iter_get_arg_type(&iterator) {
        case CDBUS_TYPE_BYTE: return .byte(basic(UInt8(0)))
        case CDBUS_TYPE_BOOLEAN: return .boolean(basic(dbus_bool_t(0)) != 0)
        case CDBUS_TYPE_INT16: return .int16(basic(Int16(0)))
        case CDBUS_TYPE_UINT16: return .uint16(basic(UInt16(0)))
        case CDBUS_TYPE_INT32: return .int32(basic(Int32(0)))
        case CDBUS_TYPE_UINT32: return .uint32(basic(UInt32(0)))
        case CDBUS_TYPE_INT64: return .int64(basic(Int64(0)))
        case CDBUS_TYPE_UINT64: return .uint64(basic(UInt64(0)))
        case CDBUS_TYPE_DOUBLE: return .double(basic(Double(0)))
        case CDBUS_TYPE_STRING: return .string(text())
        case CDBUS_TYPE_OBJECT_PATH: return .objectPath(DBusObjectPath(text()))
        case CDBUS_TYPE_SIGNATURE: return .signature(DBusSignature(text()))
        case CDBUS_TYPE_UNIX_FD:
            // libdbus hands out a duplicate that the reader owns.
            return .fileDescriptor(DBusFileDescriptor(taking: basic(Int32(-1))))
        case CDBUS_TYPE_ARRAY:
            let element = elementSignature(&iterator)
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &sub)
            if element.hasPrefix("{") {
                let inner = String(element.dropFirst().dropLast())
                let keyType = String(inner.prefix(1))  // dictionary keys are basic types: one character
                var entries: [DBusDictionaryEntry] = []
                while dbus_message_iter_get_arg_type(&sub) == CDBUS_TYPE_DICT_ENTRY {
                    var pair = DBusMessageIter()
                    dbus_message_iter_recurse(&sub, &pair)
                    guard let key = read(&pair), dbus_message_iter_next(&pair) != 0, let value = read(&pair) else { break }
                    entries.append(DBusDictionaryEntry(key, value))
                    dbus_message_iter_next(&sub)
                }
                return .dictionary(key: DBusSignature(keyType), value: DBusSignature(String(inner.dropFirst())), entries)
            }
            var elements: [DBusValue] = []
            while dbus_message_iter_get_arg_type(&sub) != CDBUS_TYPE_INVALID {
                guard let item = read(&sub) else { break }
                elements.append(item)
                dbus_message_iter_next(&sub)
            }
            return .array(DBusSignature(element), elements)
        case CDBUS_TYPE_STRUCT:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &sub)
            var members: [DBusValue] = []
            while dbus_message_iter_get_arg_type(&sub) != CDBUS_TYPE_INVALID {
                guard let member = read(&sub) else { break }
                members.append(member)
                dbus_message_iter_next(&sub)
            }
            return .structure(members)
        case CDBUS_TYPE_VARIANT:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &sub)
            return read(&sub).map(DBusValue.variant)
        default:
            return nil
        }
    }

    /// The signature of an array's elements (the array's own signature without its `a`).
    private static func elementSignature(_ iterator: inout DBusMessageIter) -> String {
        guard let signature = dbus_message_iter_get_signature(&iterator) else { return "" }
        defer { dbus_free(signature) }
        return String(String(cString: signature).dropFirst())
    }
}
