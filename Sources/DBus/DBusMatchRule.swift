import Foundation

/// Which signals to receive (the bus's match rules, for signals only). Empty members match all.
public struct DBusMatchRule: Sendable, Hashable {
    public var sender: String?
    public var path: DBusObjectPath?
    public var pathNamespace: DBusObjectPath?
    public var interface: String?
    public var member: String?
    public var arg0: String?

    public init(sender: String? = nil, path: DBusObjectPath? = nil, pathNamespace: DBusObjectPath? = nil, interface: String? = nil,
                member: String? = nil, arg0: String? = nil) {
        (self.sender, self.path, self.pathNamespace, self.interface, self.member, self.arg0) = (sender, path, pathNamespace, interface, member, arg0)
    }

    /// The rule as the bus takes it: values quoted, a quote inside a value written as `'\''`.
    public var rule: String {
        var parts = ["type='signal'"]
        func add(_ key: String, _ value: String?) {
            guard let value else { return }
            parts.append("\(key)='\(value.replacingOccurrences(of: "'", with: "'\\''"))'")
        }
        add("sender", sender)
        add("path", path?.rawValue)
        add("path_namespace", pathNamespace?.rawValue)
        add("interface", interface)
        add("member", member)
        add("arg0", arg0)
        return parts.joined(separator: ",")
    }

    /// Whether a signal the bus delivered is one this rule asked for. The bus delivers a message
    /// once however many rules matched, so each subscription checks its own. `senderOwner` is the
    /// unique name owning `sender` when it is a well-known name.
    func matches(_ signal: DBusSignal, senderOwner: String?) -> Bool {
        if let sender, sender != signal.sender, senderOwner != signal.sender { return false }
        if let path, path != signal.path { return false }
        if let pathNamespace, pathNamespace.rawValue != "/", signal.path != pathNamespace,
           !signal.path.rawValue.hasPrefix(pathNamespace.rawValue + "/") { return false }
        if let interface, interface != signal.interface { return false }
        if let member, member != signal.member { return false }
        if let arg0, signal.arguments.first?.string != arg0 { return false }
        return true
    }
}

/// A signal received.
public struct DBusSignal: Sendable {
    public var sender: String
    public var path: DBusObjectPath
    public var interface: String
    public var member: String
    public var arguments: [DBusValue]
}

/// A method call to an object we export.
public struct DBusMethodCall: Sendable {
    public var sender: String
    public var path: DBusObjectPath
    public var interface: String
    public var member: String
    public var arguments: [DBusValue]
}
