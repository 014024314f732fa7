import A2DP
import DBus

/// Our A2DP source endpoint (`org.bluez.MediaEndpoint1`, SBC). BlueZ has no audio stream to a
/// device until an endpoint exists: when a sink connects, it asks us to pick a configuration from
/// the sink's capabilities (`SelectConfiguration`), then hands over the transport it made
/// (`SetConfiguration`), and takes it back when the link goes (`ClearConfiguration`).
@MainActor
final class SBCSourceEndpoint {
    /// A transport BlueZ gave us: the device it streams to, and how.
    struct Configured {
        let device: DBusObjectPath
        let configuration: SBCConfiguration
    }

    /// Each transport BlueZ gave us, by transport path.
    private(set) var transports: [DBusObjectPath: Configured] = [:]
    /// BlueZ took a transport back (the device disconnected or went out of range).
    var cleared: (DBusObjectPath) -> Void = { _ in }

    /// What `Media1.RegisterEndpoint` announces.
    nonisolated static var registration: [String: DBusValue] {
        ["UUID": .string(BlueZ.audioSourceUUID), "Codec": .byte(BlueZ.sbcCodec), "Capabilities": .bytes(SBCConfiguration.sourceCapabilities)]
    }

    nonisolated func interface() -> DBusInterface {
        DBusInterface(BlueZ.mediaEndpoint, methods: [
            DBusMethod("SelectConfiguration", inputs: [DBusArgument("capabilities", "ay")], outputs: [DBusArgument("configuration", "ay")]) { call throws(DBusError) in
                guard let capabilities = call.arguments.first?.bytes else { throw DBusError.invalidArguments("SelectConfiguration needs the sink's capabilities") }
                do {
                    return [.bytes(try SBCConfiguration.select(from: capabilities).bytes)]
                } catch {
                    throw DBusError.invalidArguments("no SBC configuration both sides support: \(error)")
                }
            },
            DBusMethod("SetConfiguration", inputs: [DBusArgument("transport", "o"), DBusArgument("properties", "a{sv}")]) { call throws(DBusError) in
                guard let transport = call.arguments.first?.objectPath, let properties = call.arguments.last?.properties,
                      let device = properties["Device"]?.objectPath, let bytes = properties["Configuration"]?.bytes else {
                    throw DBusError.invalidArguments("SetConfiguration needs a transport with its Device and Configuration")
                }
                let configuration: SBCConfiguration
                do { configuration = try SBCConfiguration(bytes: bytes) } catch {
                    throw DBusError.invalidArguments("cannot use SBC configuration \(bytes): \(error)")
                }
                await self.store(Configured(device: device, configuration: configuration), for: transport)
                return []
            },
            DBusMethod("ClearConfiguration", inputs: [DBusArgument("transport", "o")]) { call throws(DBusError) in
                if let transport = call.arguments.first?.objectPath { await self.clear(transport) }
                return []
            },
            DBusMethod("Release") { _ throws(DBusError) in [] },
        ])
    }

    private func store(_ configured: Configured, for transport: DBusObjectPath) { transports[transport] = configured }

    private func clear(_ transport: DBusObjectPath) {
        guard transports.removeValue(forKey: transport) != nil else { return }
        cleared(transport)
    }

    /// The transport BlueZ configured for `device`, if any.
    func transport(of device: DBusObjectPath) -> DBusObjectPath? { transports.first { $0.value.device == device }?.key }

    /// BlueZ went away: its transports with it.
    func forgetAll() { transports = [:] }
}
