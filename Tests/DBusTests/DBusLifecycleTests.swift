import DBus
import Foundation
import MediaRouteIPC
import PrivateDaemons
import Testing

/// What a long-running client meets: abandoned calls, ended subscriptions, bad input from its own
/// code, and how fast a call goes.
@Suite("D-Bus: cancellation, subscriptions ending, refused input, speed", .serialized, .timeLimit(.minutes(2)))
struct DBusLifecycleTests {
    /// The bus's own list of our match rules (dbus-daemon's Debug.Stats, enabled in Debian's build).
    static func matchRules(of connection: DBusConnection, askedBy asking: DBusConnection) async throws -> [String] {
        let reply = try await asking.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                          interface: "org.freedesktop.DBus.Debug.Stats", method: "GetAllMatchRules")
        return reply.first?.entries?.first { $0.key.string == connection.uniqueName }?.value.strings ?? []
    }

    @Test func aStreamWhoseConsumerEndsRemovesItsMatch() async throws {
        try await DBusConnectionTests.withPair { server, client, _ in
            let kept = try await client.signals(matching: DBusMatchRule(path: "/kept", member: "Tick"))
            let ending = try await client.signals(matching: DBusMatchRule(path: "/ending", member: "Tick"))
            let rules = try await Self.matchRules(of: client, askedBy: server)
            #expect(rules.contains { $0.contains("path='/ending'") } && rules.contains { $0.contains("path='/kept'") }, "\(rules)")

            let consumer = Task {
                var count = 0
                for await _ in ending { count += 1 }
                return count
            }
            try await server.emit(path: "/ending", interface: "org.test.Echo", signal: "Tick")
            consumer.cancel()  // the consumer goes away
            _ = await consumer.value
            try await DBusTestWaiting.until("the ended stream's match removed") {
                try await !Self.matchRules(of: client, askedBy: server).contains { $0.contains("path='/ending'") }
            }
            #expect(try await Self.matchRules(of: client, askedBy: server).contains { $0.contains("path='/kept'") })
            // The other subscription still delivers.
            try await server.emit(path: "/kept", interface: "org.test.Echo", signal: "Tick", [.uint32(7)])
            let delivered = try await DBusTestWaiting.first(of: kept, within: .seconds(10)) { _ in true }
            #expect(delivered?.arguments == [.uint32(7)])
        }
    }

    @Test func cancellingTheCallingTaskAbandonsTheCall() async throws {
        let (started, startedContinuation) = AsyncStream<String>.makeStream()
        let (gate, opening) = AsyncStream<Void>.makeStream()
        let slow = DBusInterface("org.test.Slow", methods: [
            DBusMethod("Wait", inputs: [DBusArgument("who", "s")]) { call throws(DBusError) in
                startedContinuation.yield(call.arguments.first?.string ?? "")
                for await _ in gate {}
                return []
            },
        ])
        try await DBusConnectionTests.withPair(["/slow": [slow]]) { server, client, _ in
            defer { opening.finish() }
            let name = server.uniqueName
            let begin = ContinuousClock.now
            // Cancelled at once (perhaps before it is sent) and cancelled while the peer works on it.
            let early = Task { try await client.call(destination: name, path: "/slow", interface: "org.test.Slow", method: "Wait", [.string("early")], timeout: .seconds(20)) }
            early.cancel()
            let late = Task { try await client.call(destination: name, path: "/slow", interface: "org.test.Slow", method: "Wait", [.string("late")], timeout: .seconds(20)) }
            for await who in started where who == "late" { break }
            late.cancel()
            for task in [early, late] {
                let error = await #expect(throws: DBusError.self) { try await task.value }
                #expect(error?.name == DBusError.cancelled, "\(String(describing: error))")
            }
            #expect(ContinuousClock.now - begin < .seconds(10))
            // The connection goes on.
            let pong = try await client.call(destination: name, path: "/", interface: "org.freedesktop.DBus.Peer", method: "Ping")
            #expect(pong == [])
        }
    }

    @Test func inputLibDBusWouldAbortOnIsRefusedWithASentence() async throws {
        try await DBusConnectionTests.withPair(["/test": [DBusConnectionTests.echo]]) { server, client, _ in
            let name = server.uniqueName
            let calls: [(String, DBusObjectPath, String, String, String)] = [
                (name, "/trailing/", "org.test.Echo", "Echo", "not a valid object path"),
                (name, "/a//b", "org.test.Echo", "Echo", "not a valid object path"),
                (name, "/bad-char", "org.test.Echo", "Echo", "not a valid object path"),
                (name, "/test", "nodots", "Echo", "not a valid interface name"),
                (name, "/test", "org..test", "Echo", "not a valid interface name"),
                (name, "/test", "org.test.Echo", "1bad", "not a valid member name"),
                (name, "/test", "org.test.Echo", "has.dot", "not a valid member name"),
                ("not a bus name", "/test", "org.test.Echo", "Echo", "not a valid bus name"),
            ]
            for (destination, path, interface, method, says) in calls {
                let error = await #expect(throws: DBusError.self) {
                    try await client.call(destination: destination, path: path, interface: interface, method: method, [.variant(.byte(1))])
                }
                #expect(error?.name == DBusError.invalidArgs && error?.message.contains(says) == true, "\(String(describing: error))")
            }
            let taken = DBusFileDescriptor(taking: dup(1))
            if let fd = taken.take() { close(fd) }
            let values: [(DBusValue, String)] = [
                (.string("nul\u{0}inside"), "NUL"),
                (.objectPath("relative"), "not a valid object path"),
                (.signature("a{"), "not a valid"),
                (.array("zz", []), "not a valid single complete type signature"),
                (.array("s", [.uint32(1)]), "an array of s holds a u"),
                (.dictionary(key: "s", value: "v", [DBusDictionaryEntry(.string("k"), .string("not a variant"))]), "holds {ss}"),
                (.dictionary(key: "as", value: "v", []), "not a valid"),
                (.structure([]), "at least one member"),
                (.fileDescriptor(taken), "already taken"),
            ]
            for (value, says) in values {
                let error = await #expect(throws: DBusError.self) {
                    try await client.call(destination: name, path: "/test", interface: "org.test.Echo", method: "Echo", [.variant(value)])
                }
                #expect(error?.name == DBusError.invalidArgs && error?.message.contains(says) == true, "\(value): \(String(describing: error))")
            }
            let emitted = await #expect(throws: DBusError.self) { try await server.emit(path: "nope", interface: "org.test.Echo", signal: "Tick") }
            #expect(emitted?.name == DBusError.invalidArgs)
            let exported = await #expect(throws: DBusError.self) { try await server.export([DBusConnectionTests.echo], at: "/x/") }
            #expect(exported?.name == DBusError.invalidArgs)
            let badMember = await #expect(throws: DBusError.self) {
                try await server.export([DBusInterface("org.test.Bad", methods: [DBusMethod("no-dash") { _ throws(DBusError) in [] }])], at: "/bad")
            }
            #expect(badMember?.message.contains("not a valid member name") == true)
            // Bytes that are not UTF-8 never make a Swift string: they arrive repaired, and travel.
            let repaired = String(decoding: [0x61, 0xFF, 0x62], as: UTF8.self)
            let echoed = try await client.call(destination: name, path: "/test", interface: "org.test.Echo", method: "Echo", [.variant(.string(repaired))])
            #expect(echoed == [.variant(.string("a\u{FFFD}b"))])
            // A handler's error name that is not one becomes Failed, its message kept.
            let failed = await #expect(throws: DBusError.self) {
                try await client.call(destination: name, path: "/test", interface: "org.test.Echo", method: "Fail", [.string("not an error name"), .string("why")])
            }
            #expect(failed == DBusError(name: DBusError.failed, message: "why"))
        }
    }

    @Test func aConnectionReleasedWithoutCloseLeavesTheBus() async throws {
        try await DBusConnectionTests.withPair { server, client, bus in
            var released: DBusConnection? = try await DBusConnection.connect(address: bus.address)
            let name = try #require(released?.uniqueName)
            let leaving = try await client.signals(matching: DBusMatchRule(sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus",
                                                                           member: "NameOwnerChanged", arg0: name))
            // Signals keep arriving for it while it goes: none may reach the freed connection.
            _ = try await released?.signals(matching: DBusMatchRule(member: "Tick"))
            let emitter = Task {
                while !Task.isCancelled {
                    try? await server.emit(path: "/", interface: "org.test.Echo", signal: "Tick")
                    await Task.yield()
                }
            }
            released = nil
            let left = try await DBusTestWaiting.first(of: leaving, within: .seconds(10)) { NameOwnerChangedSignal($0)?.newOwner.isEmpty == true }
            emitter.cancel()
            _ = await emitter.value
            #expect(left != nil, "\(name) did not leave the bus within 10 s of being released")
        }
    }

    /// The round trip of a call to a method exported in the same process, through dbus-daemon.
    @Test func roundTripTime() async throws {
        try await DBusConnectionTests.withPair(["/test": [DBusConnectionTests.echo]]) { server, client, _ in
            let name = server.uniqueName
            let clock = ContinuousClock()
            var times: [Duration] = []
            for i in 0..<3200 {
                let start = clock.now
                let sum = try await client.call(destination: name, path: "/test", interface: "org.test.Echo", method: "Add", [.int32(Int32(i)), .int32(1)])
                if i >= 200 { times.append(clock.now - start) }  // the first are warm-up
                #expect(sum == [.int32(Int32(i) + 1)])
            }
            times.sort()
            let median = times[times.count / 2]
            let p99 = times[times.count * 99 / 100]
            print("D-Bus call round trip (client -> dbus-daemon -> exported handler -> back), \(times.count) calls: median \(median), p99 \(p99)")
            #expect(median < .milliseconds(20))
        }
    }
}
