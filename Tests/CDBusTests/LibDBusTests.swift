import CDBus
import Testing
import PrivateDaemons

@Suite("libdbus against a private dbus-daemon")
struct LibDBusTests {
    @Test(.timeLimit(.minutes(1)))
    func connectsRegistersAndListsItsOwnName() throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        var error = DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }

        let connection = try #require(dbus_connection_open_private(bus.address, &error), "open: \(String(cString: error.message))")
        defer {
            dbus_connection_close(connection)
            dbus_connection_unref(connection)
        }
        #expect(dbus_bus_register(connection, &error) != 0)
        let uniqueName = String(cString: dbus_bus_get_unique_name(connection))
        #expect(uniqueName.hasPrefix(":"))

        let call = try #require(dbus_message_new_method_call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "ListNames"))
        defer { dbus_message_unref(call) }
        let reply = try #require(dbus_connection_send_with_reply_and_block(connection, call, 5000, &error), "ListNames: \(String(cString: error.message))")
        defer { dbus_message_unref(reply) }

        var names: [String] = []
        var top = DBusMessageIter()
        #expect(dbus_message_iter_init(reply, &top) != 0)
        #expect(dbus_message_iter_get_arg_type(&top) == CDBUS_TYPE_ARRAY)
        var element = DBusMessageIter()
        dbus_message_iter_recurse(&top, &element)
        while dbus_message_iter_get_arg_type(&element) == CDBUS_TYPE_STRING {
            var value: UnsafePointer<CChar>? = nil
            dbus_message_iter_get_basic(&element, &value)
            names.append(String(cString: value!))
            dbus_message_iter_next(&element)
        }
        #expect(names.contains("org.freedesktop.DBus"))
        #expect(names.contains(uniqueName))
    }

    @Test func refusesAnAddressWithNoDaemon() {
        var error = DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        let connection = dbus_connection_open_private("unix:path=/nonexistent/mediaroute.sock", &error)
        #expect(connection == nil)
        #expect(dbus_error_is_set(&error) != 0)
        #expect(String(cString: error.name) == "org.freedesktop.DBus.Error.FileNotFound")
    }
}
