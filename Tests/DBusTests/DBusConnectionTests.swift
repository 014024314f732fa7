import DBus
import Foundation
import Glibc
import MediaRouteIPC
import PrivateDaemons
import Synchronization
import Testing

/// Two connections on a private dbus-daemon talking to each other, and to the daemon itself.
@Suite("D-Bus: calls, exported objects, errors", .serialized, .timeLimit(.minutes(2)))
struct DBusConnectionTests {
    /// A private bus, a server connection exporting `objects`, and a client; all closed and stopped afterwards.
    static func withPair(_ objects: [DBusObjectPath: [DBusInterface]] = [:],
                         _ body: (_ server: DBusConnection, _ client: DBusConnection, _ bus: PrivateBus) async throws -> Void) async throws {
        let bus = try await PrivateBus.start()
        var connections: [DBusConnection] = []
        do {
            let server = try await DBusConnection.connect(address: bus.address)
            connections.append(server)
            let client = try await DBusConnection.connect(address: bus.address)
            connections.append(client)
            for (path, interfaces) in objects { try await server.export(interfaces, at: path) }
            try await body(server, client, bus)
        } catch {
            for connection in connections { await connection.close() }
            await bus.stopFromTask()
            throw error
        }
        for connection in connections { await connection.close() }
        await bus.stopFromTask()
    }

    static let echo = DBusInterface("org.test.Echo", methods: [
        DBusMethod("Echo", inputs: [DBusArgument("value", "v")], outputs: [DBusArgument("value", "v")]) { call throws(DBusError) in call.arguments },
        DBusMethod("Fail", inputs: [DBusArgument("name", "s"), DBusArgument("message", "s")]) { call throws(DBusError) in
            throw DBusError(name: call.arguments[0].string ?? "", message: call.arguments[1].string ?? "")
        },
        DBusMethod("Never") { _ throws(DBusError) in
            try? await Task.sleep(for: .seconds(30))
            return []
        },
        DBusMethod("Add", inputs: [DBusArgument("a", "i"), DBusArgument("b", "i")], outputs: [DBusArgument("sum", "i")]) { call throws(DBusError) in
            [.int32((call.arguments[0].int32 ?? 0) &+ (call.arguments[1].int32 ?? 0))]
        },
    ], properties: [
        DBusProperty("Name", "s", get: { .string("echo") }),
    ], signals: [DBusSignalDescription("Tick", arguments: [DBusArgument("count", "u")])])

    private func echo(_ client: DBusConnection, _ server: DBusConnection, _ value: DBusValue) async throws -> DBusValue? {
        try await client.call(destination: server.uniqueName, path: "/test", interface: "org.test.Echo", method: "Echo", [.variant(value)]).first
    }

    @Test func everyTypeRoundTrips() async throws {
        try await Self.withPair(["/test": [Self.echo]]) { server, client, _ in
            let values: [DBusValue] = [
                .byte(255), .boolean(true), .int16(.min), .uint16(.max), .int32(.min), .uint32(.max), .int64(.min), .uint64(.max),
                .double(-1.5), .string("héllo ✓"), .objectPath("/org/bluez/hci0"), .signature("a{sv}"),
                .array("s", []), .strings(["a", "b"]), .bytes([0, 1, 255]),
                .array("(si)", [.structure([.string("one"), .int32(1)]), .structure([.string("two"), .int32(2)])]),
                .properties(["Volume": .uint16(64), "Nested": .variant(.variant(.string("deep"))), "List": .array("o", [.objectPath("/a")])]),
                .dictionary(key: "u", value: "as", [DBusDictionaryEntry(.uint32(7), .strings(["x"]))]),
            ]
            for value in values {
                let echoed = try await echo(client, server, value)
                #expect(echoed == .variant(value), "\(value)")
            }
        }
    }

    @Test func aFileDescriptorTravels() async throws {
        try await Self.withPair(["/test": [Self.echo]]) { server, client, _ in
            var ends: [Int32] = [-1, -1]
            #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0)
            defer { close(ends[1]) }
            let sent = DBusFileDescriptor(taking: ends[0])
            let back = try await echo(client, server, .fileDescriptor(sent))
            let received = try #require(back?.fileDescriptor?.take())
            defer { close(received) }
            #expect(received != ends[0])  // a duplicate, owned by the receiver
            #expect(write(received, "ping", 4) == 4)
            var buffer = [UInt8](repeating: 0, count: 4)
            #expect(read(ends[1], &buffer, 4) == 4 && buffer == Array("ping".utf8))
        }
    }

    @Test func errorsSayWhat() async throws {
        try await Self.withPair(["/test": [Self.echo]]) { server, client, _ in
            let name = server.uniqueName
            let thrown = await #expect(throws: DBusError.self) {
                try await client.call(destination: name, path: "/test", interface: "org.test.Echo", method: "Fail", [.string("org.test.Error.Sad"), .string("it went wrong")])
            }
            #expect(thrown == DBusError(name: "org.test.Error.Sad", message: "it went wrong"))
            let cases: [(DBusObjectPath, String, String, [DBusValue], String)] = [
                ("/nothing", "org.test.Echo", "Echo", [.variant(.byte(1))], DBusError.unknownObject),
                ("/test", "org.test.Other", "Echo", [.variant(.byte(1))], DBusError.unknownInterface),
                ("/test", "org.test.Echo", "Shout", [], DBusError.unknownMethod),
                ("/test", "org.test.Echo", "Add", [.string("1"), .int32(2)], DBusError.invalidArgs),
            ]
            for (path, interface, method, arguments, expected) in cases {
                let error = await #expect(throws: DBusError.self) {
                    try await client.call(destination: name, path: path, interface: interface, method: method, arguments)
                }
                #expect(error?.name == expected, "\(path) \(interface).\(method): \(String(describing: error))")
            }
            let sum = try await client.call(destination: name, path: "/test", interface: "org.test.Echo", method: "Add", [.int32(2), .int32(40)])
            #expect(sum == [.int32(42)])
            let nobody = await #expect(throws: DBusError.self) {
                try await client.call(destination: "org.test.Nobody", path: "/", interface: "org.test.Echo", method: "Echo")
            }
            #expect(nobody?.name == DBusError.serviceUnknown)
            let slow = await #expect(throws: DBusError.self) {
                try await client.call(destination: name, path: "/test", interface: "org.test.Echo", method: "Never", timeout: .milliseconds(300))
            }
            #expect(slow?.name == DBusError.noReply)
            // What libdbus would abort on is refused with a sentence.
            let badPath = await #expect(throws: DBusError.self) {
                try await client.call(destination: name, path: "no/slash", interface: "org.test.Echo", method: "Echo")
            }
            #expect(badPath?.message.contains("not a valid object path") == true)
            let nul = await #expect(throws: DBusError.self) { try await echo(client, server, .string("a\u{0}b")) }
            #expect(nul?.message.contains("NUL") == true)
            let mixed = await #expect(throws: DBusError.self) { try await echo(client, server, .array("s", [.uint32(1)])) }
            #expect(mixed?.message.contains("an array of s holds a u") == true)
        }
    }

    @Test func propertiesAndIntrospection() async throws {
        let level = Mutex<UInt16>(10)
        let volume = DBusInterface("org.test.Volume", properties: [
            DBusProperty("Level", "q", get: { .uint16(level.withLock { $0 }) }, set: { value throws(DBusError) in level.withLock { $0 = value.uint16 ?? 0 } }),
            DBusProperty("Max", "q", get: { .uint16(127) }),
        ])
        try await Self.withPair(["/test": [Self.echo, volume], "/test/child/deeper": [volume]]) { server, client, _ in
            let name = server.uniqueName
            #expect(try await client.property("Level", of: "org.test.Volume", at: "/test", on: name) == .uint16(10))
            try await client.setProperty("Level", of: "org.test.Volume", at: "/test", on: name, to: .uint16(99))
            #expect(level.withLock { $0 } == 99)
            #expect(try await client.properties(of: "org.test.Volume", at: "/test", on: name) == ["Level": .uint16(99), "Max": .uint16(127)])
            let readOnly = await #expect(throws: DBusError.self) {
                try await client.setProperty("Max", of: "org.test.Volume", at: "/test", on: name, to: .uint16(1))
            }
            #expect(readOnly?.name == DBusError.propertyReadOnly)
            let wrongType = await #expect(throws: DBusError.self) {
                try await client.setProperty("Level", of: "org.test.Volume", at: "/test", on: name, to: .string("loud"))
            }
            #expect(wrongType?.name == DBusError.invalidArgs)
            let xml = try #require(try await client.call(destination: name, path: "/test", interface: "org.freedesktop.DBus.Introspectable", method: "Introspect").first?.string)
            #expect(xml.contains("<method name=\"Add\"><arg name=\"a\" type=\"i\" direction=\"in\"/>"))
            #expect(xml.contains("<property name=\"Level\" type=\"q\" access=\"readwrite\"/>"))
            #expect(xml.contains("<signal name=\"Tick\"><arg name=\"count\" type=\"u\"/></signal>"))
            #expect(xml.contains("<node name=\"child\"/>"))
            let root = try #require(try await client.call(destination: name, path: "/", interface: "org.freedesktop.DBus.Introspectable", method: "Introspect").first?.string)
            #expect(root.contains("<node name=\"test\"/>"))
        }
    }

    @Test func aThousandConcurrentCallsAndAHandlerThatCallsBack() async throws {
        let reentrant = Mutex<DBusConnection?>(nil)
        let calling = DBusInterface("org.test.Calling", methods: [
            DBusMethod("AskBack", inputs: [DBusArgument("who", "s")], outputs: [DBusArgument("sum", "i")]) { call throws(DBusError) in
                guard let server = reentrant.withLock({ $0 }) else { throw DBusError(name: DBusError.failed, message: "no server") }
                return try await server.call(destination: call.arguments[0].string ?? "", path: "/test", interface: "org.test.Echo", method: "Add", [.int32(1), .int32(2)])
            },
        ])
        try await Self.withPair(["/test": [Self.echo], "/calling": [calling]]) { server, client, _ in
            reentrant.withLock { $0 = server }
            try await client.export([Self.echo], at: "/test")
            let name = server.uniqueName
            let sums = try await withThrowingTaskGroup(of: Bool.self) { group in
                for i in 0..<1000 {
                    group.addTask {
                        try await client.call(destination: name, path: "/test", interface: "org.test.Echo", method: "Add", [.int32(Int32(i)), .int32(1)]) == [.int32(Int32(i) + 1)]
                    }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(sums == 1000)
            #expect(try await client.call(destination: name, path: "/calling", interface: "org.test.Calling", method: "AskBack", [.string(client.uniqueName)]) == [.int32(3)])
        }
    }
}
