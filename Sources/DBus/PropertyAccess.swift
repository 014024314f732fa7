/// `org.freedesktop.DBus.Properties` for an exported object, from its property descriptions.
enum PropertyAccess {
    static func answer(_ call: DBusMethodCall, signature: String, object: [String: DBusInterface])
        throws(DBusError) -> @Sendable () async throws(DBusError) -> [DBusValue] {
        func interface(_ name: String) throws(DBusError) -> DBusInterface {
            guard let interface = object[name] else { throw DBusError(name: DBusError.unknownInterface, message: "\(call.path) has no interface \(name)") }
            return interface
        }
        func property(_ interfaceName: String, _ name: String) throws(DBusError) -> DBusProperty {
            guard let property = try interface(interfaceName).properties.first(where: { $0.name == name }) else {
                throw DBusError(name: DBusError.unknownProperty, message: "\(interfaceName) has no property \(name)")
            }
            return property
        }
        switch (call.member, signature) {
        case ("Get", "ss"):
            let found = try property(call.arguments[0].string ?? "", call.arguments[1].string ?? "")
            return { [.variant(await found.get())] }
        case ("GetAll", "s"):
            let properties = try interface(call.arguments[0].string ?? "").properties
            return {
                var values: [String: DBusValue] = [:]
                for property in properties { values[property.name] = await property.get() }
                return [.properties(values)]
            }
        case ("Set", "ssv"):
            let found = try property(call.arguments[0].string ?? "", call.arguments[1].string ?? "")
            guard let set = found.set else { throw DBusError(name: DBusError.propertyReadOnly, message: "\(found.name) is read-only") }
            guard case .variant(let value) = call.arguments[2], value.signature == found.signature else {
                throw .invalidArguments("\(found.name) is of type \(found.signature)")
            }
            return { () async throws(DBusError) in
                try await set(value)
                return []
            }
        case ("Get", _), ("GetAll", _), ("Set", _):
            throw .invalidArguments("Properties.\(call.member) does not take (\(signature))")
        default:
            throw DBusError(name: DBusError.unknownMethod, message: "org.freedesktop.DBus.Properties has no method \(call.member)")
        }
    }
}
