import CDBus

/// Appends values to a libdbus message, checking first what libdbus would refuse (or abort on):
/// strings with NUL, invalid object paths and signatures, containers whose elements do not match
/// their declared signature. A refusal names the value, so the caller learns which argument.
enum MessageWriter {
    static func append(_ values: [DBusValue], to message: OpaquePointer) throws(DBusError) {
        var iterator = DBusMessageIter()
        dbus_message_iter_init_append(message, &iterator)
        for (index, value) in values.enumerated() {
            do {
                try check(value)
                try write(value, into: &iterator)
            } catch {
                throw DBusError.invalidArguments("argument \(index + 1): \(error.message)")
            }
        }
    }

    /// What libdbus requires of each value, checked before any of it is written.
    static func check(_ value: DBusValue) throws(DBusError) {
        switch value {
        case .string(let text):
            guard !text.utf8.contains(0) else { throw .invalidArguments("a string may not contain NUL: \(text.debugDescription)") }
            // Swift strings are valid UTF-8 already; libdbus aborts on what it calls invalid, so ask it.
            guard dbus_validate_utf8(text, nil) != 0 else { throw .invalidArguments("libdbus does not take \(text.debugDescription) as UTF-8") }
        case .objectPath(let path):
            guard path.isValid else { throw .invalidArguments("\"\(path)\" is not a valid object path") }
        case .signature(let signature):
            try checkSignature(signature, single: false)
        case .fileDescriptor(let fd):
            guard fd.borrowed != nil else { throw .invalidArguments("a file descriptor that was already taken") }
        case .array(let element, let elements):
            try checkSignature(element, single: true)
            for item in elements {
                guard item.signature == element else { throw .invalidArguments("an array of \(element) holds a \(item.signature)") }
                try check(item)
            }
        case .dictionary(let key, let value, let entries):
            try checkSignature(DBusSignature("a{" + key.rawValue + value.rawValue + "}"), single: true)
            for entry in entries {
                guard entry.key.signature == key, entry.value.signature == value else {
                    throw .invalidArguments("a dictionary of {\(key)\(value)} holds {\(entry.key.signature)\(entry.value.signature)}")
                }
                try check(entry.key)
                try check(entry.value)
            }
        case .structure(let members):
            guard !members.isEmpty else { throw .invalidArguments("a structure needs at least one member") }
            for member in members { try check(member) }
        case .variant(let inner):
            try check(inner)
        default:
            break
        }
    }

    private static func checkSignature(_ signature: DBusSignature, single: Bool) throws(DBusError) {
        let valid = signature.rawValue.withCString { single ? dbus_signature_validate_single($0, nil) != 0 : dbus_signature_validate($0, nil) != 0 }
        guard valid, !signature.rawValue.utf8.contains(0) else { throw .invalidArguments("\"\(signature)\" is not a valid\(single ? " single complete" : "") type signature") }
    }

    private static func write(_ value: DBusValue, into iterator: inout DBusMessageIter) throws(DBusError) {
        func basic<T: BitwiseCopyable>(_ type: Int32, _ value: T) throws(DBusError) {
            var copy = value
            guard dbus_message_iter_append_basic(&iterator, type, &copy) != 0 else { throw .invalidArguments("out of memory writing \(value)") }
        }
        switch value {
        case .byte(let v): try basic(CDBUS_TYPE_BYTE, v)
        case .boolean(let v): try basic(CDBUS_TYPE_BOOLEAN, dbus_bool_t(v ? 1 : 0))
        case .int16(let v): try basic(CDBUS_TYPE_INT16, v)
        case .uint16(let v): try basic(CDBUS_TYPE_UINT16, v)
        case .int32(let v): try basic(CDBUS_TYPE_INT32, v)
        case .uint32(let v): try basic(CDBUS_TYPE_UINT32, v)
        case .int64(let v): try basic(CDBUS_TYPE_INT64, v)
        case .uint64(let v): try basic(CDBUS_TYPE_UINT64, v)
        case .double(let v): try basic(CDBUS_TYPE_DOUBLE, v)
        case .string(let v): try text(CDBUS_TYPE_STRING, v, into: &iterator)
        case .objectPath(let v): try text(CDBUS_TYPE_OBJECT_PATH, v.rawValue, into: &iterator)
        case .signature(let v): try text(CDBUS_TYPE_SIGNATURE, v.rawValue, into: &iterator)
        case .fileDescriptor(let fd):
            // libdbus duplicates the descriptor; ours stays owned by the value.
            try basic(CDBUS_TYPE_UNIX_FD, fd.borrowed ?? -1)
        case .array(let element, let elements):
            try container(CDBUS_TYPE_ARRAY, element.rawValue, into: &iterator) { (sub: inout DBusMessageIter) throws(DBusError) in
                for item in elements { try write(item, into: &sub) }
            }
        case .dictionary(let key, let valueType, let entries):
            try container(CDBUS_TYPE_ARRAY, "{" + key.rawValue + valueType.rawValue + "}", into: &iterator) { (sub: inout DBusMessageIter) throws(DBusError) in
                for entry in entries {
                    try container(CDBUS_TYPE_DICT_ENTRY, nil, into: &sub) { (pair: inout DBusMessageIter) throws(DBusError) in
                        try write(entry.key, into: &pair)
                        try write(entry.value, into: &pair)
                    }
                }
            }
        case .structure(let members):
            try container(CDBUS_TYPE_STRUCT, nil, into: &iterator) { (sub: inout DBusMessageIter) throws(DBusError) in
                for member in members { try write(member, into: &sub) }
            }
        case .variant(let inner):
            try container(CDBUS_TYPE_VARIANT, inner.signature.rawValue, into: &iterator) { (sub: inout DBusMessageIter) throws(DBusError) in
                try write(inner, into: &sub)
            }
        }
    }

    private static func text(_ type: Int32, _ value: String, into iterator: inout DBusMessageIter) throws(DBusError) {
        let ok = value.withCString { pointer in
            var p: UnsafePointer<CChar>? = pointer
            return dbus_message_iter_append_basic(&iterator, type, &p) != 0
        }
        guard ok else { throw .invalidArguments("libdbus refused \(value.debugDescription)") }
    }

    private static func container(_ type: Int32, _ signature: String?, into iterator: inout DBusMessageIter,
                                  _ body: (inout DBusMessageIter) throws(DBusError) -> Void) throws(DBusError) {
        var sub = DBusMessageIter()
        let opened = if let signature { signature.withCString { dbus_message_iter_open_container(&iterator, type, $0, &sub) } }
                     else { dbus_message_iter_open_container(&iterator, type, nil, &sub) }
        guard opened != 0 else { throw .invalidArguments("out of memory opening a container") }
        do {
            try body(&sub)
        } catch {
            dbus_message_iter_abandon_container(&iterator, &sub)
            throw error
        }
        guard dbus_message_iter_close_container(&iterator, &sub) != 0 else { throw .invalidArguments("out of memory closing a container") }
    }
}
