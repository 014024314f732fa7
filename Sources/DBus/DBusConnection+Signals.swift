import CDBus

/// Signals: a match rule on the bus per subscription, and each subscription checking its own
/// rule (the bus delivers a message once, however many rules matched).
extension DBusConnection {
    /// Adds `rule` on the bus and yields the signals it matches, in order, until the stream's
    /// consumer goes away (the rule is then removed) or the connection closes (the stream finishes).
    public func signals(matching rule: DBusMatchRule) async throws(DBusError) -> AsyncStream<DBusSignal> {
        try await addMatch(rule)
        if let sender = rule.sender, !sender.hasPrefix(":"), sender != Self.bus, owners[sender] == nil {
            // Signals come from the owner's unique name: follow who owns `sender`.
            try await addMatch(DBusMatchRule(sender: Self.bus, interface: Self.bus, member: "NameOwnerChanged", arg0: sender))
            let owner = try? await call(destination: Self.bus, path: Self.busPath, interface: Self.bus, method: "GetNameOwner", [.string(sender)])
            owners[sender] = owner?.first?.string ?? ""
        }
        let (stream, continuation) = AsyncStream<DBusSignal>.makeStream()
        let id = nextSubscription
        nextSubscription += 1
        subscriptions[id] = Subscription(rule: rule, continuation: continuation)
        continuation.onTermination = { [weak self] _ in
            Task { await self?.unsubscribe(id) }
        }
        return stream
    }

    private func addMatch(_ rule: DBusMatchRule) async throws(DBusError) {
        _ = try await call(destination: Self.bus, path: Self.busPath, interface: Self.bus, method: "AddMatch", [.string(rule.rule)])
    }

    private func unsubscribe(_ id: Int) {
        guard let subscription = subscriptions.removeValue(forKey: id) else { return }
        post(destination: Self.bus, path: Self.busPath, interface: Self.bus, method: "RemoveMatch", [.string(subscription.rule.rule)])
    }

    func deliver(_ signal: DBusSignal) {
        if let change = NameOwnerChangedSignal(signal), signal.sender == Self.bus, owners[change.name] != nil {
            owners[change.name] = change.newOwner
        }
        for subscription in subscriptions.values where subscription.rule.matches(signal, senderOwner: subscription.rule.sender.flatMap { owners[$0] }) {
            subscription.continuation.yield(signal)
        }
    }

    /// Emits a signal from one of our objects.
    public func emit(path: DBusObjectPath, interface: String, signal: String, _ arguments: [DBusValue] = []) throws(DBusError) {
        guard isConnected else { throw .disconnected("cannot emit \(interface).\(signal): the connection is closed") }
        try Self.checkNames(destination: nil, path: path, interface: interface, member: signal)
        guard let message = dbus_message_new_signal(path.rawValue, interface, signal) else {
            throw DBusError(name: DBusError.noMemory, message: "cannot make signal \(interface).\(signal)")
        }
        defer { dbus_message_unref(message) }
        try MessageWriter.append(arguments, to: message)
        _ = dbus_connection_send(raw, message, nil)
    }

    /// `org.freedesktop.DBus.Properties.PropertiesChanged` for one of our objects.
    public func emitPropertiesChanged(path: DBusObjectPath, interface: String, changed: [String: DBusValue], invalidated: [String] = []) throws(DBusError) {
        try emit(path: path, interface: Self.propertiesInterface, signal: "PropertiesChanged", [.string(interface), .properties(changed), .strings(invalidated)])
    }
}
