import DBus
import Foundation
import MediaRouteIPC
import PrivateDaemons
import Synchronization
import Testing

/// Signals through a real dbus-daemon: match rules, the standard signals, names, the bus going away.
@Suite("D-Bus: signals, names, disconnection", .serialized, .timeLimit(.minutes(2)))
struct DBusSignalTests {
    /// Collects what a stream yields, for waiting on.
    final class Collected: Sendable {
        private let list = Mutex<[DBusSignal]>([])
        private let ended = Mutex(false)
        init(_ stream: AsyncStream<DBusSignal>) {
            Task {
                for await signal in stream { self.list.withLock { $0.append(signal) } }
                self.ended.withLock { $0 = true }
            }
        }
        var all: [DBusSignal] { list.withLock { $0 } }
        var hasEnded: Bool { ended.withLock { $0 } }
    }

    static func waitUntil(_ what: String, _ condition: () async -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while !(await condition()) {
            guard ContinuousClock.now < deadline else { throw DBusError(name: "test.Timeout", message: "\(what): not within 10 s") }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    @Test func matchRulesPickTheirSignalsAndPropertiesChangedDecodes() async throws {
        try await DBusConnectionTests.withPair { server, client, _ in
            let ticks = Collected(try await client.signals(matching: DBusMatchRule(sender: server.uniqueName, interface: "org.test.Echo", member: "Tick")))
            let underA = Collected(try await client.signals(matching: DBusMatchRule(pathNamespace: "/a")))
            let named = Collected(try await client.signals(matching: DBusMatchRule(member: "Named", arg0: "wanted")))
            let changes = Collected(try await client.signals(matching: DBusMatchRule(interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged")))

            try await server.emit(path: "/a/b", interface: "org.test.Echo", signal: "Tick", [.uint32(1)])
            try await server.emit(path: "/z", interface: "org.test.Echo", signal: "Tock", [.uint32(2)])
            try await server.emit(path: "/z", interface: "org.test.Other", signal: "Named", [.string("unwanted")])
            try await server.emit(path: "/z", interface: "org.test.Other", signal: "Named", [.string("wanted")])
            try await server.emitPropertiesChanged(path: "/a", interface: "org.test.Volume", changed: ["Level": .uint16(5)], invalidated: ["Max"])
            // The last signal sent is seen: everything before it has been delivered (one connection keeps order).
            try await Self.waitUntil("PropertiesChanged") { !changes.all.isEmpty }

            #expect(ticks.all.map(\.member) == ["Tick"] && ticks.all.first?.arguments == [.uint32(1)] && ticks.all.first?.path == "/a/b")
            #expect(underA.all.map(\.member) == ["Tick", "PropertiesChanged"])
            #expect(named.all.map { $0.arguments.first?.string } == ["wanted"])
            let change = try #require(changes.all.first.flatMap(PropertiesChangedSignal.init))
            #expect(change.interface == "org.test.Volume" && change.changed == ["Level": .uint16(5)] && change.invalidated == ["Max"])
        }
    }

    @Test func aWellKnownSenderIsFollowedAcrossOwners() async throws {
        try await DBusConnectionTests.withPair { server, client, bus in
            let owners = Collected(try await client.signals(matching: DBusMatchRule(sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus",
                                                                                    member: "NameOwnerChanged", arg0: "org.test.Speaker")))
            let fromSpeaker = Collected(try await client.signals(matching: DBusMatchRule(sender: "org.test.Speaker", member: "Hello")))
            #expect(try await client.nameHasOwner("org.test.Speaker") == false)
            try await server.requestName("org.test.Speaker")
            try await Self.waitUntil("owner announced") { owners.all.count == 1 }
            #expect(NameOwnerChangedSignal(owners.all[0])?.newOwner == server.uniqueName)
            #expect(try await client.nameHasOwner("org.test.Speaker"))
            let taken = await #expect(throws: DBusError.self) { try await client.requestName("org.test.Speaker") }
            #expect(taken?.message == "org.test.Speaker is owned by another connection")

            try await server.emit(path: "/", interface: "org.test.Speaker", signal: "Hello")
            try await Self.waitUntil("hello from the owner") { fromSpeaker.all.count == 1 }

            // Another connection takes the name: its signals are the speaker's now.
            try await server.releaseName("org.test.Speaker")
            let second = try await DBusConnection.connect(address: bus.address)
            try await second.requestName("org.test.Speaker")
            try await Self.waitUntil("new owner") { owners.all.count == 3 }
            let released = try #require(NameOwnerChangedSignal(owners.all[1]))
            #expect(released.name == "org.test.Speaker" && released.oldOwner == server.uniqueName && released.newOwner.isEmpty)
            #expect(NameOwnerChangedSignal(owners.all[2])?.newOwner == second.uniqueName)
            try await second.emit(path: "/", interface: "org.test.Speaker", signal: "Hello")
            try await Self.waitUntil("hello from the new owner") { fromSpeaker.all.count == 2 }
            #expect(fromSpeaker.all.last?.sender == second.uniqueName)
            await second.close()
        }
    }

    @Test func theBusGoingAwayEndsCallsStreamsAndWaiters() async throws {
        let bus = try await PrivateBus.start()
        let client = try await DBusConnection.connect(address: bus.address)
        let server = try await DBusConnection.connect(address: bus.address)
        try await server.export([DBusConnectionTests.echo], at: "/test")
        let signals = Collected(try await client.signals(matching: DBusMatchRule(member: "Tick")))
        let name = server.uniqueName
        let waiting = Task { try await client.call(destination: name, path: "/test", interface: "org.test.Echo", method: "Never", timeout: .seconds(20)) }
        let closed = Task { await client.waitUntilClosed() }
        await bus.stopFromTask()
        let failure = await #expect(throws: DBusError.self) { try await waiting.value }
        #expect(failure?.name == DBusError.disconnected)
        await closed.value
        try await Self.waitUntil("signal stream finished") { signals.hasEnded }
        #expect(await client.isConnected == false)
        let after = await #expect(throws: DBusError.self) { try await client.call(destination: name, path: "/test", interface: "org.test.Echo", method: "Echo") }
        #expect(after?.name == DBusError.disconnected)
        await server.close()
    }
}
