import DBus

/// mutter's own screencast API (`org.gnome.Mutter.ScreenCast`, what GNOME's portal backend calls
/// once the person has agreed): a session recording one monitor, whose stream names its PipeWire
/// node. Mutter ends the session when `stop` is called or the connection that made it closes.
public final class MutterScreenCast: Sendable {
    static let service = "org.gnome.Mutter.ScreenCast"
    public let connection: DBusConnection
    public let session: DBusObjectPath
    /// The PipeWire node of the monitor's stream.
    public let node: UInt32

    private init(connection: DBusConnection, session: DBusObjectPath, node: UInt32) {
        (self.connection, self.session, self.node) = (connection, session, node)
    }

    /// CreateSession, RecordMonitor(`monitor`), Start; returns once the stream's PipeWire node is known.
    public static func recordMonitor(_ monitor: String, onBus address: String) async throws -> MutterScreenCast {
        let connection = try await DBusConnection.connect(address: address)
        do {
            let created = try await connection.call(destination: service, path: "/org/gnome/Mutter/ScreenCast", interface: service,
                                                    method: "CreateSession", [.properties([:])])
            guard let session = created.first?.objectPath else { throw PrivateDaemonError("mutter's CreateSession gave no session: \(created)") }
            let recorded = try await connection.call(destination: service, path: session, interface: service + ".Session",
                                                     method: "RecordMonitor", [.string(monitor), .properties([:])])
            guard let stream = recorded.first?.objectPath else { throw PrivateDaemonError("mutter's RecordMonitor gave no stream: \(recorded)") }
            let added = try await connection.signals(matching: DBusMatchRule(path: stream, interface: service + ".Stream", member: "PipeWireStreamAdded"))
            try await connection.call(destination: service, path: session, interface: service + ".Session", method: "Start")
            let node = try await withThrowingTaskGroup(of: UInt32?.self) { group in
                group.addTask { for await signal in added { return signal.arguments.first?.uint32 }; return nil }
                group.addTask { try await Task.sleep(for: .seconds(15)); return nil }
                defer { group.cancelAll() }
                return try await group.next() ?? nil
            }
            guard let node else { throw PrivateDaemonError("mutter's stream \(stream.rawValue) named no PipeWire node within 15 s") }
            return MutterScreenCast(connection: connection, session: session, node: node)
        } catch {
            await connection.close()
            throw error
        }
    }

    /// Stops the session (mutter destroys its stream's node) and closes the connection.
    public func stop() async {
        _ = try? await connection.call(destination: Self.service, path: session, interface: Self.service + ".Session", method: "Stop", timeout: .seconds(10))
        await connection.close()
    }
}
