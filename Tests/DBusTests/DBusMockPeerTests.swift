import DBus
import Foundation
import Glibc
import MediaRouteIPC
import PrivateDaemons
import Testing

/// Against a peer that is not ours: python3-dbusmock as an ObjectManager on a private bus, the way
/// BlueZ publishes adapters and devices (GetManagedObjects, InterfacesAdded, InterfacesRemoved).
@Suite("D-Bus: a python3-dbusmock peer", .serialized, .timeLimit(.minutes(1)))
struct DBusMockPeerTests {
    static let service = "org.example.Test"
    static let root: DBusObjectPath = "/org/example"

    /// A private bus, dbusmock serving `service` as an ObjectManager at `root`, and a client
    /// connection; the mock is stopped by its PID and the bus stopped whatever happens.
    static func withMock(_ body: (_ client: DBusConnection) async throws -> Void) async throws {
        let bus = try await PrivateBus.start()
        var mock: ChildProcess?
        var client: DBusConnection?
        do {
            let connection = try await DBusConnection.connect(address: bus.address)
            client = connection
            let owners = try await connection.signals(matching: DBusMatchRule(sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus",
                                                                              member: "NameOwnerChanged", arg0: service))
            let devNull = open("/dev/null", O_WRONLY | O_CLOEXEC)
            defer { close(devNull) }
            var environment = ProcessInfo.processInfo.environment
            environment["DBUS_SYSTEM_BUS_ADDRESS"] = bus.address
            // Debian's dbusmock is installed for the system python, not for any python3 on PATH.
            mock = try ChildProcess(executable: "/usr/bin/python3",
                                    arguments: ["-m", "dbusmock", "--system", "--is-object-manager", service, root.rawValue, "org.example.Manager"],
                                    environment: environment.map { "\($0.key)=\($0.value)" }, standardOutput: devNull, standardError: devNull)
            let owned = try await DBusTestWaiting.first(of: owners, within: .seconds(15)) { NameOwnerChangedSignal($0)?.newOwner.isEmpty == false }
            guard owned != nil else { throw DBusError(name: "test.Timeout", message: "dbusmock did not take \(service) within 15 s") }
            try await body(connection)
        } catch {
            await client?.close()
            await mock?.terminate(grace: .seconds(5))
            await bus.stopFromTask()
            throw error
        }
        await client?.close()
        await mock?.terminate(grace: .seconds(5))
        await bus.stopFromTask()
    }

    /// dbusmock's own control interface: adds an object with `properties` on `interface`.
    static func addObject(_ client: DBusConnection, _ path: DBusObjectPath, _ interface: String, _ properties: [String: DBusValue]) async throws {
        try await client.call(destination: service, path: root, interface: "org.freedesktop.DBus.Mock", method: "AddObject",
                              [.objectPath(path), .string(interface), .properties(properties), .array("(ssss)", [])])
    }

    @Test func managedObjectsAndInterfaceSignalsFromARealPeer() async throws {
        try await Self.withMock { client in
            let device = Self.root.appending("dev_AA_BB")
            let properties: [String: DBusValue] = ["Alias": .string("Speaker"), "Volume": .uint16(64), "Paired": .boolean(true),
                                                   "UUIDs": .strings(["0000110b-0000-1000-8000-00805f9b34fb"])]
            try await Self.addObject(client, device, "org.example.Device", properties)
            let objects = try await client.managedObjects(on: Self.service, at: Self.root)
            #expect(objects == [device: ["org.example.Device": properties]])

            // dbusmock leaves the ObjectManager signals to its user: it emits what it is told, in its own marshalling.
            let added = try await client.signals(matching: DBusMatchRule(sender: Self.service, interface: "org.freedesktop.DBus.ObjectManager"))
            try await client.call(destination: Self.service, path: Self.root, interface: "org.freedesktop.DBus.Mock", method: "EmitSignal",
                                  [.string("org.freedesktop.DBus.ObjectManager"), .string("InterfacesAdded"), .string("oa{sa{sv}}"),
                                   .array("v", [.variant(.objectPath(device)),
                                                .variant(.dictionary(key: "s", value: "a{sv}", [DBusDictionaryEntry(.string("org.example.Device"), .properties(properties))]))])])
            try await client.call(destination: Self.service, path: Self.root, interface: "org.freedesktop.DBus.Mock", method: "EmitSignal",
                                  [.string("org.freedesktop.DBus.ObjectManager"), .string("InterfacesRemoved"), .string("oas"),
                                   .array("v", [.variant(.objectPath(device)), .variant(.strings(["org.example.Device"]))])])
            var iterator = added.makeAsyncIterator()
            let first = try #require(await iterator.next())
            let decodedAdded = try #require(InterfacesAddedSignal(first))
            #expect(decodedAdded.path == device && decodedAdded.interfaces == ["org.example.Device": properties])
            #expect(InterfacesRemovedSignal(first) == nil)
            let second = try #require(await iterator.next())
            let decodedRemoved = try #require(InterfacesRemovedSignal(second))
            #expect(decodedRemoved.path == device && decodedRemoved.interfaces == ["org.example.Device"])

            // Properties through the peer's own Properties implementation.
            #expect(try await client.property("Alias", of: "org.example.Device", at: device, on: Self.service) == .string("Speaker"))
            #expect(try await client.properties(of: "org.example.Device", at: device, on: Self.service) == properties)
            let missing = await #expect(throws: DBusError.self) {
                try await client.managedObjects(on: Self.service, at: "/org/example/nothing")
            }
            #expect(missing?.name == DBusError.unknownMethod || missing?.name == DBusError.unknownObject, "\(String(describing: missing))")
        }
    }
}
