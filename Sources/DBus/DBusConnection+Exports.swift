import CDBus

/// Objects we export: calls to them run their handlers in tasks of their own and are answered
/// when the handler returns; properties and introspection are answered from the descriptions.
extension DBusConnection {
    /// Answers calls to `interfaces` at `path` (replacing what was exported there), and
    /// Introspect, Properties Get/Set/GetAll for them; Peer.Ping is libdbus's own.
    public func export(_ interfaces: [DBusInterface], at path: DBusObjectPath) throws(DBusError) {
        guard path.isValid else { throw .invalidArguments("\"\(path)\" is not a valid object path") }
        for interface in interfaces {
            guard dbus_validate_interface(interface.name, nil) != 0 else { throw .invalidArguments("\"\(interface.name)\" is not a valid interface name") }
            // Members no caller could name would only show up, unreachable, in the introspection.
            let members = interface.methods.map(\.name) + interface.properties.map(\.name) + interface.signals.map(\.name)
            if let bad = members.first(where: { dbus_validate_member($0, nil) == 0 }) {
                throw .invalidArguments("\"\(bad)\" in \(interface.name) is not a valid member name")
            }
        }
        exported[path] = Dictionary(interfaces.map { ($0.name, $0) }, uniquingKeysWith: { _, last in last })
    }

    public func unexport(_ path: DBusObjectPath) { exported[path] = nil }

    func called(_ message: OpaquePointer) {
        let call = DBusMethodCall(sender: Self.string(dbus_message_get_sender(message)), path: DBusObjectPath(Self.string(dbus_message_get_path(message))),
                                  interface: Self.string(dbus_message_get_interface(message)), member: Self.string(dbus_message_get_member(message)),
                                  arguments: MessageReader.arguments(of: message))
        let signature = Self.string(dbus_message_get_signature(message))
        dbus_message_ref(message)
        let reference = MessageReference(message)
        let answer: @Sendable () async throws(DBusError) -> [DBusValue]
        do {
            answer = try route(call, signature: signature)
        } catch {
            return reply(to: reference, .failure(error))
        }
        Task {
            let result: Result<[DBusValue], DBusError>
            do throws(DBusError) { result = .success(try await answer()) } catch { result = .failure(error) }
            self.reply(to: reference, result)
        }
    }

    /// What answers `call`, or the error that says why nothing does.
    private func route(_ call: DBusMethodCall, signature: String) throws(DBusError) -> @Sendable () async throws(DBusError) -> [DBusValue] {
        if call.interface == "org.freedesktop.DBus.Introspectable", call.member == "Introspect" {
            let xml = Introspection.xml(for: call.path, exported: exported)
            guard let xml else { throw DBusError(name: DBusError.unknownObject, message: "no object at \(call.path)") }
            return { [.string(xml)] }
        }
        guard let object = exported[call.path] else { throw DBusError(name: DBusError.unknownObject, message: "no object at \(call.path)") }
        if call.interface == Self.propertiesInterface { return try PropertyAccess.answer(call, signature: signature, object: object) }
        let interface: DBusInterface
        if call.interface.isEmpty {
            guard let found = object.values.first(where: { $0.methods.contains { $0.name == call.member } }) else {
                throw DBusError(name: DBusError.unknownMethod, message: "\(call.path) has no method \(call.member)")
            }
            interface = found
        } else {
            guard let found = object[call.interface] else {
                throw DBusError(name: DBusError.unknownInterface, message: "\(call.path) has no interface \(call.interface)")
            }
            interface = found
        }
        guard let method = interface.methods.first(where: { $0.name == call.member }) else {
            throw DBusError(name: DBusError.unknownMethod, message: "\(interface.name) has no method \(call.member)")
        }
        let expected = method.inputs.map(\.signature.rawValue).joined()
        guard signature == expected else {
            throw .invalidArguments("\(interface.name).\(method.name) takes (\(expected)), not (\(signature))")
        }
        return { () async throws(DBusError) in try await method.handler(call) }
    }

    private func reply(to call: MessageReference, _ result: Result<[DBusValue], DBusError>) {
        defer { dbus_message_unref(call.message) }
        guard isConnected, dbus_message_get_no_reply(call.message) == 0 else { return }
        var answer: OpaquePointer?
        switch result {
        case .success(let values):
            answer = dbus_message_new_method_return(call.message)
            if let answer, let problem = Result(catching: { () throws(DBusError) in try MessageWriter.append(values, to: answer) }).failure {
                dbus_message_unref(answer)
                return reply(to: call.retained(), .failure(DBusError(name: DBusError.failed, message: "the handler's answer cannot be sent: \(problem.message)")))
            }
        case .failure(let error):
            let name = dbus_validate_error_name(error.name, nil) != 0 ? error.name : DBusError.failed
            answer = dbus_message_new_error(call.message, name, error.message.utf8.contains(0) ? "" : error.message)
        }
        guard let answer else { return }
        _ = dbus_connection_send(raw, answer, nil)
        dbus_message_unref(answer)
    }
}

/// A libdbus message kept (one reference of ours) until its call is answered, possibly after the
/// handler's task: the message itself is only touched on the loop thread.
struct MessageReference: @unchecked Sendable {  // an OpaquePointer, used on the loop thread only
    let message: OpaquePointer
    init(_ message: OpaquePointer) { self.message = message }
    /// Another reference, for a second use of the same call.
    func retained() -> MessageReference {
        dbus_message_ref(message)
        return self
    }
}

extension Result {
    var failure: Failure? { if case .failure(let error) = self { error } else { nil } }
}
