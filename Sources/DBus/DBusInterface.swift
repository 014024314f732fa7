/// An interface of an object we export: its methods, properties and signals. The connection
/// answers calls, property reads and writes, and introspection from this description alone.
public struct DBusInterface: Sendable {
    public let name: String
    public let methods: [DBusMethod]
    public let properties: [DBusProperty]
    public let signals: [DBusSignalDescription]

    public init(_ name: String, methods: [DBusMethod] = [], properties: [DBusProperty] = [], signals: [DBusSignalDescription] = []) {
        (self.name, self.methods, self.properties, self.signals) = (name, methods, properties, signals)
    }
}

/// A named, typed argument (for introspection and for checking incoming calls).
public struct DBusArgument: Sendable {
    public var name: String
    public var signature: DBusSignature
    public init(_ name: String, _ signature: DBusSignature) { (self.name, self.signature) = (name, signature) }
}

public struct DBusMethod: Sendable {
    public let name: String
    public let inputs: [DBusArgument]
    public let outputs: [DBusArgument]
    let handler: @Sendable (DBusMethodCall) async throws(DBusError) -> [DBusValue]

    /// `handler` runs in a task of its own and may take its time (an agent waiting for a person);
    /// what it throws becomes the error reply. Calls whose arguments do not match `inputs` are
    /// answered InvalidArgs without reaching it.
    public init(_ name: String, inputs: [DBusArgument] = [], outputs: [DBusArgument] = [],
                handler: @escaping @Sendable (DBusMethodCall) async throws(DBusError) -> [DBusValue]) {
        (self.name, self.inputs, self.outputs, self.handler) = (name, inputs, outputs, handler)
    }
}

public struct DBusProperty: Sendable {
    public let name: String
    public let signature: DBusSignature
    let get: @Sendable () async -> DBusValue
    let set: (@Sendable (DBusValue) async throws(DBusError) -> Void)?

    /// `set` nil makes it read-only: a Set is answered PropertyReadOnly.
    public init(_ name: String, _ signature: DBusSignature, get: @escaping @Sendable () async -> DBusValue,
                set: (@Sendable (DBusValue) async throws(DBusError) -> Void)? = nil) {
        (self.name, self.signature, self.get, self.set) = (name, signature, get, set)
    }
}

public struct DBusSignalDescription: Sendable {
    public let name: String
    public let arguments: [DBusArgument]
    public init(_ name: String, arguments: [DBusArgument] = []) { (self.name, self.arguments) = (name, arguments) }
}
