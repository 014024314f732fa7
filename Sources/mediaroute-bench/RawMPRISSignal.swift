import CDBus

/// An MPRIS `PropertiesChanged` as libdbus messages, written and read with libdbus's iterators:
/// the raw baseline emits one of the same shape and size as our player's (the Player interface, a
/// `Metadata` of track id, title, artist, album and length, nothing invalidated), and the client
/// reads the title out of both the same way.
enum RawMPRISSignal {
    static let path = "/org/mpris/MediaPlayer2"
    static let propertiesInterface = "org.freedesktop.DBus.Properties"
    static let playerInterface = "org.mpris.MediaPlayer2.Player"
    /// What a desktop's media widget subscribes to.
    static let matchRule = "type='signal',interface='\(propertiesInterface)',member='PropertiesChanged',path='\(path)'"

    /// `PropertiesChanged(Player, {Metadata: {...title...}}, [])`; the caller unrefs it.
    static func make(title: String) throws -> OpaquePointer {
        guard let message = dbus_message_new_signal(path, propertiesInterface, "PropertiesChanged") else {
            throw BenchmarkError("libdbus cannot make a PropertiesChanged signal")
        }
        var arguments = DBusMessageIter()
        dbus_message_iter_init_append(message, &arguments)
        appendString(&arguments, playerInterface)
        var changed = DBusMessageIter(), entry = DBusMessageIter(), variant = DBusMessageIter(), metadata = DBusMessageIter()
        dbus_message_iter_open_container(&arguments, CDBUS_TYPE_ARRAY, "{sv}", &changed)
        dbus_message_iter_open_container(&changed, CDBUS_TYPE_DICT_ENTRY, nil, &entry)
        appendString(&entry, "Metadata")
        dbus_message_iter_open_container(&entry, CDBUS_TYPE_VARIANT, "a{sv}", &variant)
        dbus_message_iter_open_container(&variant, CDBUS_TYPE_ARRAY, "{sv}", &metadata)
        member(&metadata, "mpris:trackid", "o") { append(&$0, CDBUS_TYPE_OBJECT_PATH, "/org/mediaroute/remote/1/track_1") }
        member(&metadata, "xesam:title", "s") { appendString(&$0, title) }
        member(&metadata, "xesam:artist", "as") { variant in
            var artists = DBusMessageIter()
            dbus_message_iter_open_container(&variant, CDBUS_TYPE_ARRAY, "s", &artists)
            appendString(&artists, "Name of Artist")
            dbus_message_iter_close_container(&variant, &artists)
        }
        member(&metadata, "xesam:album", "s") { appendString(&$0, "Title of the Album") }
        member(&metadata, "mpris:length", "x") { variant in
            var length: Int64 = 237_000_000
            dbus_message_iter_append_basic(&variant, CDBUS_TYPE_INT64, &length)
        }
        dbus_message_iter_close_container(&variant, &metadata)
        dbus_message_iter_close_container(&entry, &variant)
        dbus_message_iter_close_container(&changed, &entry)
        dbus_message_iter_close_container(&arguments, &changed)
        var invalidated = DBusMessageIter()
        dbus_message_iter_open_container(&arguments, CDBUS_TYPE_ARRAY, "s", &invalidated)
        dbus_message_iter_close_container(&arguments, &invalidated)
        return message
    }

    /// Makes the signal for `title` and sends it on `connection`, blocking until it is written.
    static func emit(title: String, on connection: RawBusConnection) throws {
        let message = try make(title: title)
        defer { dbus_message_unref(message) }
        connection.send(message)
    }

    /// The `xesam:title` of the `Metadata` a Player `PropertiesChanged` carries; nil for any other message.
    static func title(of message: OpaquePointer) -> String? {
        guard dbus_message_is_signal(message, propertiesInterface, "PropertiesChanged") != 0 else { return nil }
        var arguments = DBusMessageIter()
        guard dbus_message_iter_init(message, &arguments) != 0, string(&arguments) == playerInterface, dbus_message_iter_next(&arguments) != 0,
              var metadata = value(of: "Metadata", in: &arguments), var title = value(of: "xesam:title", in: &metadata) else { return nil }
        return string(&title)
    }

    // MARK: Parts

    private static func member(_ dictionary: inout DBusMessageIter, _ key: String, _ signature: String, _ body: (inout DBusMessageIter) -> Void) {
        var entry = DBusMessageIter(), variant = DBusMessageIter()
        dbus_message_iter_open_container(&dictionary, CDBUS_TYPE_DICT_ENTRY, nil, &entry)
        appendString(&entry, key)
        dbus_message_iter_open_container(&entry, CDBUS_TYPE_VARIANT, signature, &variant)
        body(&variant)
        dbus_message_iter_close_container(&entry, &variant)
        dbus_message_iter_close_container(&dictionary, &entry)
    }

    private static func appendString(_ iterator: inout DBusMessageIter, _ text: String) { append(&iterator, CDBUS_TYPE_STRING, text) }

    private static func append(_ iterator: inout DBusMessageIter, _ type: Int32, _ text: String) {
        text.withCString { pointer in
            var value: UnsafePointer<CChar>? = pointer
            _ = dbus_message_iter_append_basic(&iterator, type, &value)
        }
    }

    private static func string(_ iterator: inout DBusMessageIter) -> String? {
        guard dbus_message_iter_get_arg_type(&iterator) == CDBUS_TYPE_STRING else { return nil }
        var pointer: UnsafePointer<CChar>?
        dbus_message_iter_get_basic(&iterator, &pointer)
        return pointer.map { String(cString: $0) }
    }

    /// Inside the variant of `key` in the `a{sv}` at `iterator`.
    private static func value(of key: String, in iterator: inout DBusMessageIter) -> DBusMessageIter? {
        if dbus_message_iter_get_arg_type(&iterator) == CDBUS_TYPE_VARIANT {
            var inner = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &inner)
            return value(of: key, in: &inner)
        }
        guard dbus_message_iter_get_arg_type(&iterator) == CDBUS_TYPE_ARRAY else { return nil }
        var entries = DBusMessageIter()
        dbus_message_iter_recurse(&iterator, &entries)
        while dbus_message_iter_get_arg_type(&entries) == CDBUS_TYPE_DICT_ENTRY {
            var entry = DBusMessageIter()
            dbus_message_iter_recurse(&entries, &entry)
            if string(&entry) == key, dbus_message_iter_next(&entry) != 0, dbus_message_iter_get_arg_type(&entry) == CDBUS_TYPE_VARIANT {
                var inner = DBusMessageIter()
                dbus_message_iter_recurse(&entry, &inner)
                return inner
            }
            dbus_message_iter_next(&entries)
        }
        return nil
    }
}
