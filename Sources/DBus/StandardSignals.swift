/// `org.freedesktop.DBus.Properties.PropertiesChanged`.
public struct PropertiesChangedSignal: Sendable {
    public var interface: String
    public var changed: [String: DBusValue]
    public var invalidated: [String]

    public init?(_ signal: DBusSignal) {
        guard signal.interface == "org.freedesktop.DBus.Properties", signal.member == "PropertiesChanged", signal.arguments.count == 3,
              let interface = signal.arguments[0].string, let changed = signal.arguments[1].properties else { return nil }
        (self.interface, self.changed, self.invalidated) = (interface, changed, signal.arguments[2].strings ?? [])
    }
}

/// `org.freedesktop.DBus.ObjectManager.InterfacesAdded`: path -> interface -> properties.
public struct InterfacesAddedSignal: Sendable {
    public var path: DBusObjectPath
    public var interfaces: [String: [String: DBusValue]]

    public init?(_ signal: DBusSignal) {
        guard signal.interface == "org.freedesktop.DBus.ObjectManager", signal.member == "InterfacesAdded", signal.arguments.count == 2,
              let path = signal.arguments[0].objectPath, let interfaces = Self.interfaces(signal.arguments[1]) else { return nil }
        (self.path, self.interfaces) = (path, interfaces)
    }

    /// An `a{sa{sv}}`.
    static func interfaces(_ value: DBusValue) -> [String: [String: DBusValue]]? {
        guard let entries = value.entries else { return nil }
        var result: [String: [String: DBusValue]] = [:]
        for entry in entries {
            guard let name = entry.key.string, let properties = entry.value.properties else { return nil }
            result[name] = properties
        }
        return result
    }
}

/// `org.freedesktop.DBus.ObjectManager.InterfacesRemoved`.
public struct InterfacesRemovedSignal: Sendable {
    public var path: DBusObjectPath
    public var interfaces: [String]

    public init?(_ signal: DBusSignal) {
        guard signal.interface == "org.freedesktop.DBus.ObjectManager", signal.member == "InterfacesRemoved", signal.arguments.count == 2,
              let path = signal.arguments[0].objectPath, let interfaces = signal.arguments[1].strings else { return nil }
        (self.path, self.interfaces) = (path, interfaces)
    }
}

/// `org.freedesktop.DBus.NameOwnerChanged`: an empty owner means none.
public struct NameOwnerChangedSignal: Sendable {
    public var name: String
    public var oldOwner: String
    public var newOwner: String

    public init?(_ signal: DBusSignal) {
        guard signal.interface == "org.freedesktop.DBus", signal.member == "NameOwnerChanged", signal.arguments.count == 3,
              let name = signal.arguments[0].string, let old = signal.arguments[1].string, let new = signal.arguments[2].string else { return nil }
        (self.name, self.oldOwner, self.newOwner) = (name, old, new)
    }
}
