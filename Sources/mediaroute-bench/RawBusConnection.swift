import CDBus
import Foundation

/// A plain libdbus connection to a bus, used with blocking calls by one thread at a time: what a C
/// program on the bus would do, with nothing of ours between it and libdbus. The raw side of
/// `nowplaying-latency` (the signal's sender and the client that receives it) is made of these.
final class RawBusConnection: @unchecked Sendable {  // handed to the one thread that uses it; libdbus's own locks cover the rest
    let pointer: OpaquePointer
    private var isClosed = false

    init(address: String) throws {
        _ = dbus_threads_init_default()
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        guard let raw = dbus_connection_open_private(address, &error) else {
            throw BenchmarkError("libdbus cannot connect to the bus at \(address): \(Self.message(error))")
        }
        dbus_connection_set_exit_on_disconnect(raw, 0)
        guard dbus_bus_register(raw, &error) != 0 else {
            let why = Self.message(error)
            dbus_connection_close(raw)
            dbus_connection_unref(raw)
            throw BenchmarkError("the bus at \(address) did not register a libdbus connection: \(why)")
        }
        pointer = raw
    }

    /// Adds a match rule on the bus and waits for the bus to take it.
    func addMatch(_ rule: String) throws {
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        dbus_bus_add_match(pointer, rule, &error)
        if dbus_error_is_set(&error) != 0 { throw BenchmarkError("the bus refused the match rule \(rule): \(Self.message(error))") }
    }

    /// Sends `message` and blocks until it is written to the bus's socket.
    func send(_ message: OpaquePointer) {
        _ = dbus_connection_send(pointer, message, nil)
        dbus_connection_flush(pointer)
    }

    /// Whether some connection owns a name starting with `prefix` now (`ListNames`, blocking).
    func ownsName(startingWith prefix: String) throws -> Bool {
        guard let call = dbus_message_new_method_call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "ListNames") else {
            throw BenchmarkError("libdbus cannot make a ListNames call")
        }
        defer { dbus_message_unref(call) }
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        guard let reply = dbus_connection_send_with_reply_and_block(pointer, call, 5_000, &error) else {
            throw BenchmarkError("the bus did not answer ListNames: \(Self.message(error))")
        }
        defer { dbus_message_unref(reply) }
        var arguments = DBusMessageIter(), names = DBusMessageIter()
        guard dbus_message_iter_init(reply, &arguments) != 0, dbus_message_iter_get_arg_type(&arguments) == CDBUS_TYPE_ARRAY else { return false }
        dbus_message_iter_recurse(&arguments, &names)
        while dbus_message_iter_get_arg_type(&names) == CDBUS_TYPE_STRING {
            var name: UnsafePointer<CChar>?
            dbus_message_iter_get_basic(&names, &name)
            if let name, String(cString: name).hasPrefix(prefix) { return true }
            dbus_message_iter_next(&names)
        }
        return false
    }

    /// Closes the connection. Safe to call twice; only once its thread is done with it.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        dbus_connection_close(pointer)
        dbus_connection_unref(pointer)
    }

    deinit { close() }

    private static func message(_ error: CDBus.DBusError) -> String {
        error.message.map { String(cString: $0) } ?? error.name.map { String(cString: $0) } ?? "no reason given"
    }
}
