import CDBus
import MediaRouteIPC
import Synchronization

/// Method calls: sent at once, answered when the reply (or error, or our timeout) comes.
extension DBusConnection {
    static let maximumPendingCalls = 100

    /// Calls `method` and returns the reply's arguments; a D-Bus error reply throws as `DBusError`.
    /// No answer within `timeout` is `NoReply`; a cancelled task stops waiting (`Cancelled`).
    @discardableResult
    public func call(destination: String, path: DBusObjectPath, interface: String, method: String,
                     _ arguments: [DBusValue] = [], timeout: Duration = .seconds(25)) async throws(DBusError) -> [DBusValue] {
        let description = "\(interface).\(method) on \(destination) \(path)"
        guard isConnected else { throw .disconnected("\(description): the connection is closed") }
        try Self.checkNames(destination: destination, path: path, interface: interface, member: method)
        guard let message = dbus_message_new_method_call(destination, path.rawValue, interface, method) else {
            throw DBusError(name: DBusError.noMemory, message: "cannot make a message for \(description)")
        }
        let outgoing = MessageReference(message)
        defer { dbus_message_unref(message) }
        try MessageWriter.append(arguments, to: message)
        // The bus refuses more than a few hundred outstanding calls per connection (dbus-daemon's
        // max_replies_per_connection): past our share, callers wait their turn here instead.
        while pending.count + callsStarting >= Self.maximumPendingCalls || !isConnected {
            guard isConnected else { throw .disconnected("\(description): the connection is closed") }
            await withCheckedContinuation { callersWaiting.append($0) }
        }
        callsStarting += 1
        let serial = Mutex<UInt32>(0)
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<[DBusValue], DBusError>, Never>) in
                // Sent and registered in one step on the loop: the reply cannot come in between.
                callsStarting -= 1
                var sent: UInt32 = 0
                guard !Task.isCancelled else { return continuation.resume(returning: .failure(Self.cancelled(description))) }
                guard isConnected, dbus_connection_send(raw, outgoing.message, &sent) != 0 else {
                    return continuation.resume(returning: .failure(DBusError.disconnected("\(description): the connection is closed")))
                }
                let registered = sent
                serial.withLock { $0 = registered }
                let timer = loop.schedule(after: timeout) { [unowned self] in
                    self.assumeIsolated { $0.finish(registered, .failure(DBusError(name: DBusError.noReply, message: "\(description): no answer within \(timeout)"))) }
                }
                pending[registered] = PendingCall(continuation: continuation, timer: timer, description: description)
                // Cancelled before the serial was known: `onCancel` found nothing to abandon.
                if Task.isCancelled { finish(registered, .failure(Self.cancelled(description))) }
            }
        } onCancel: {
            let sent = serial.withLock { $0 }
            guard sent != 0 else { return }  // not sent yet: the body sees the cancellation itself
            Task { await self.finish(sent, .failure(Self.cancelled(description))) }
        }
        return try result.get()
    }

    static func cancelled(_ description: String) -> DBusError {
        DBusError(name: DBusError.cancelled, message: "\(description): the caller stopped waiting")
    }

    /// Sends a call without waiting for, or wanting, an answer.
    func post(destination: String, path: DBusObjectPath, interface: String, method: String, _ arguments: [DBusValue]) {
        guard isConnected, let message = dbus_message_new_method_call(destination, path.rawValue, interface, method) else { return }
        defer { dbus_message_unref(message) }
        dbus_message_set_no_reply(message, 1)
        guard (try? MessageWriter.append(arguments, to: message)) != nil else { return }
        _ = dbus_connection_send(raw, message, nil)
    }

    func replied(_ message: OpaquePointer) {
        let serial = dbus_message_get_reply_serial(message)
        guard pending[serial] != nil else { return }
        let arguments = MessageReader.arguments(of: message)
        if dbus_message_get_type(message) == DBUS_MESSAGE_TYPE_ERROR {
            finish(serial, .failure(DBusError(name: Self.string(dbus_message_get_error_name(message)), message: arguments.first?.string ?? "")))
        } else {
            finish(serial, .success(arguments))
        }
    }

    func finish(_ serial: UInt32, _ result: Result<[DBusValue], DBusError>) {
        guard let call = pending.removeValue(forKey: serial) else { return }
        loop.cancelTimer(call.timer)
        call.continuation.resume(returning: result)
        if !callersWaiting.isEmpty { callersWaiting.removeFirst().resume() }
    }

    /// libdbus aborts on some invalid names: refuse them here, saying which.
    static func checkNames(destination: String?, path: DBusObjectPath, interface: String?, member: String) throws(DBusError) {
        if let destination, dbus_validate_bus_name(destination, nil) == 0 { throw .invalidArguments("\"\(destination)\" is not a valid bus name") }
        guard path.isValid else { throw .invalidArguments("\"\(path)\" is not a valid object path") }
        if let interface, dbus_validate_interface(interface, nil) == 0 { throw .invalidArguments("\"\(interface)\" is not a valid interface name") }
        if dbus_validate_member(member, nil) == 0 { throw .invalidArguments("\"\(member)\" is not a valid member name") }
    }
}

/// The conveniences every client of BlueZ, MPRIS and the bus itself needs.
extension DBusConnection {
    static let bus = "org.freedesktop.DBus"
    static let busPath: DBusObjectPath = "/org/freedesktop/DBus"
    static let propertiesInterface = "org.freedesktop.DBus.Properties"

    public func property(_ name: String, of interface: String, at path: DBusObjectPath, on destination: String) async throws(DBusError) -> DBusValue {
        let reply = try await call(destination: destination, path: path, interface: Self.propertiesInterface, method: "Get", [.string(interface), .string(name)])
        guard case .variant(let value)? = reply.first else { throw .invalidArguments("Get of \(interface).\(name) answered \(reply) instead of a variant") }
        return value
    }

    /// Sets a property (the value is wrapped in the variant the call takes).
    public func setProperty(_ name: String, of interface: String, at path: DBusObjectPath, on destination: String, to value: DBusValue) async throws(DBusError) {
        _ = try await call(destination: destination, path: path, interface: Self.propertiesInterface, method: "Set", [.string(interface), .string(name), .variant(value)])
    }

    public func properties(of interface: String, at path: DBusObjectPath, on destination: String) async throws(DBusError) -> [String: DBusValue] {
        let reply = try await call(destination: destination, path: path, interface: Self.propertiesInterface, method: "GetAll", [.string(interface)])
        guard let properties = reply.first?.properties else { throw .invalidArguments("GetAll of \(interface) answered \(reply) instead of a{sv}") }
        return properties
    }

    /// `org.freedesktop.DBus.ObjectManager.GetManagedObjects`: path -> interface -> properties.
    public func managedObjects(on destination: String, at path: DBusObjectPath = "/") async throws(DBusError) -> [DBusObjectPath: [String: [String: DBusValue]]] {
        let reply = try await call(destination: destination, path: path, interface: "org.freedesktop.DBus.ObjectManager", method: "GetManagedObjects")
        guard let entries = reply.first?.entries else { throw .invalidArguments("GetManagedObjects answered \(reply) instead of a{oa{sa{sv}}}") }
        var objects: [DBusObjectPath: [String: [String: DBusValue]]] = [:]
        for entry in entries {
            guard let objectPath = entry.key.objectPath, let interfaces = InterfacesAddedSignal.interfaces(entry.value) else {
                throw .invalidArguments("GetManagedObjects answered an entry that is not o -> a{sa{sv}}")
            }
            objects[objectPath] = interfaces
        }
        return objects
    }

    public func nameHasOwner(_ name: String) async throws(DBusError) -> Bool {
        let reply = try await call(destination: Self.bus, path: Self.busPath, interface: Self.bus, method: "NameHasOwner", [.string(name)])
        return reply.first?.bool ?? false
    }

    /// Takes `name` on the bus; fails if someone else holds it (no queueing). `replacing` takes it
    /// from an owner that allowed replacement, in one step (clients see one NameOwnerChanged from
    /// the old owner to us); `allowingReplacement` lets another connection take it from us so.
    public func requestName(_ name: String, replacing: Bool = false, allowingReplacement: Bool = false) async throws(DBusError) {
        // DBUS_NAME_FLAG_ALLOW_REPLACEMENT 1, REPLACE_EXISTING 2, DO_NOT_QUEUE 4.
        let flags: UInt32 = 4 | (replacing ? 2 : 0) | (allowingReplacement ? 1 : 0)
        let reply = try await call(destination: Self.bus, path: Self.busPath, interface: Self.bus, method: "RequestName", [.string(name), .uint32(flags)])
        guard let result = reply.first?.uint32, result == 1 || result == 4 else {
            throw DBusError(name: "org.freedesktop.DBus.Error.NameTaken", message: "\(name) is owned by another connection")
        }
    }

    public func releaseName(_ name: String) async throws(DBusError) {
        _ = try await call(destination: Self.bus, path: Self.busPath, interface: Self.bus, method: "ReleaseName", [.string(name)])
    }
}
