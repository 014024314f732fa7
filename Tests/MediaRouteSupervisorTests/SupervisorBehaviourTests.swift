import Foundation
import MediaDevice
@testable import MediaRouteSupervisor
import Testing
import TestSupport

/// What the supervisor does that a driver author or an operator relies on, each found wrong once
/// (issue 12): discovery started once, a driver's stdin, devices forgotten by a restarted driver,
/// stops said for what they were, a device that drops its activation, a report that does not decode.
@Suite(.timeLimit(.minutes(2)))
struct SupervisorBehaviourTests {
    /// A started supervisor with one test driver of `device`, and a picker open until it lists it.
    private func listing(_ device: String, by protocolID: String, heartbeatTimeoutMilliseconds: Int64 = 2000,
                         in harness: SupervisorHarness) async throws -> (Supervisor, PickerView, (id: Int, entries: [PickerEntry])) {
        try harness.addDriver(protocolID, devices: [device], timeouts: ["heartbeatIntervalMilliseconds": 1000, "requestMilliseconds": 5000,
                                                                       "heartbeatTimeoutMilliseconds": .integer(heartbeatTimeoutMilliseconds)])
        let supervisor = try await harness.start()
        let view = PickerView()
        let picker = await supervisor.openPicker { view.update($0) }
        try await harness.waitUntil("listed") { view.names() == [device] }
        return (supervisor, view, picker)
    }

    @Test func aPickerThatStartsADriverAsksItToDiscoverOnce() async throws {
        try await SupervisorHarness.run { harness in
            let (supervisor, _, picker) = try await listing("Study Lamp", by: "org.test.once", in: harness)
            await supervisor.closePicker(picker.id)
            try await supervisor.call(driver: "org.test.once", ToDriver.Ping())
            // The driver's stderr arrives in the order it was written: once the mark is logged,
            // every discovery it started before is logged too.
            try harness.command("org.test.once", "mark")
            try await harness.waitUntil("mark logged") { harness.log.contains("test driver: unknown command mark") }
            #expect(harness.log.all.filter { $0.contains("test driver: discovery started") }.count == 1)
        }
    }

    /// A driver's connection runs on its main thread: what the main actor reports must still come
    /// after what another thread reported before it (each lost device after its found one).
    @Test func reportsFromAnotherThreadAndFromTheMainActorKeepTheirOrder() async throws {
        try await SupervisorHarness.run { harness in
            let (supervisor, view, picker) = try await listing("Den TV", by: "org.test.order", in: harness)
            try harness.command("org.test.order", "interleave:300")
            try await harness.waitUntil("the last report heard", seconds: 20) { view.names().contains("Interleaved") }
            // Answered after every report made before it: all of them have been taken in.
            try await supervisor.call(driver: "org.test.order", ToDriver.Ping())
            let names = await supervisor.pickerEntries().map(\.name)
            let left = names.filter { $0.hasPrefix("Ordered ") }
            #expect(Set(names) == ["Den TV", "Interleaved"], "\(left.count) devices heard lost before found, left listed: \(left.prefix(5).joined(separator: ", "))")
            await supervisor.closePicker(picker.id)
        }
    }

    /// A report the main actor makes is written as it is made, not once the main actor's job
    /// ends: the supervisor hears a device found while the driver's main thread works on (here it
    /// holds until told, which it would never be if the report waited for the job's end).
    @Test func aReportFromTheMainActorLeavesWhileItsJobGoesOn() async throws {
        try await SupervisorHarness.run { harness in
            // Held, the driver's main thread (which runs its loop) answers no heartbeat: the timeout
            // outlasts the hold (10 s at most), however long a loaded machine takes to see the report,
            // which it must within 9 s: a report that waited for the job's end would come at 10.
            let (supervisor, view, picker) = try await listing("Den TV", by: "org.test.hold", heartbeatTimeoutMilliseconds: 15_000, in: harness)
            try harness.command("org.test.hold", "hold:Busy TV")
            do {
                try await harness.waitUntil("Busy TV heard while the driver's main thread is held", seconds: 9) { view.names().contains("Busy TV") }
            } catch {
                try harness.release("org.test.hold")
                throw error
            }
            try harness.release("org.test.hold")
            try await supervisor.call(driver: "org.test.hold", ToDriver.Ping())
            await supervisor.closePicker(picker.id)
        }
    }

    /// A driver cannot finish another driver's session start: its `session.started` naming a
    /// session that is not its own is not taken in, and the start waits on for its own driver.
    @Test func aDriverCannotStartAnotherDriversSession() async throws {
        try await SupervisorHarness.run { harness in
            try harness.addDriver("org.test.honest", devices: ["Hall TV"])
            try harness.addDriver("org.test.liar", devices: ["Odd Box"])
            let supervisor = try await harness.start()
            let picker = await supervisor.openPicker { _ in }
            try await harness.waitUntil("both listed") { await supervisor.pickerEntries().count == 2 }
            let route = try await supervisor.activate("Hall TV") { _ in nil }
            let start = Task { try await supervisor.startSession("Hall TV", url: "http://192.0.2.1/media.hold") }
            try await harness.waitUntil("the start under way") { await supervisor.isStartingSession(route.session) }
            try harness.command("org.test.liar", "lie-started:\(route.session)")
            try await harness.waitUntil("the lie sent") { !FileManager.default.fileExists(atPath: "\(harness.state)/drivers/org.test.liar/command") }
            // Answered after the lie was read (reports and answers keep their order).
            try await supervisor.call(driver: "org.test.liar", ToDriver.Ping())
            #expect(await supervisor.isStartingSession(route.session), "the liar's session.started was taken in")
            try harness.command("org.test.honest", "fail-sessions")
            await #expect(throws: MediaDeviceError.self) { try await start.value }
            await supervisor.closePicker(picker.id)
        }
    }

    @Test func aDriverReadsNothingButItsSocket() async throws {
        try await SupervisorHarness.run { harness in
            let (supervisor, _, picker) = try await listing("Den TV", by: "org.test.quiet", in: harness)
            let pid = try #require(await harness.status("org.test.quiet")?.pid)
            #expect(try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/0") == "/dev/null")
            await supervisor.closePicker(picker.id)
        }
    }

    /// Drivers forget their devices when they exit; activating one by name discovers it again,
    /// after an idle exit and after a crash, without anyone listing devices first.
    @Test func aDeviceIsFoundAgainWhenActivatedAfterItsDriverExited() async throws {
        try await SupervisorHarness.run { harness in
            try harness.addDriver("org.test.sleepy", devices: ["Attic Radio"],
                                  timeouts: ["idleExitMilliseconds": 300, "heartbeatIntervalMilliseconds": 1000, "heartbeatTimeoutMilliseconds": 2000])
            let supervisor = try await harness.start()
            let picker = await supervisor.openPicker { _ in }
            try await harness.waitUntil("listed") { await supervisor.pickerEntries().count == 1 }
            await supervisor.closePicker(picker.id)
            try await harness.waitUntil("idle exit") { await harness.status("org.test.sleepy")?.state == .stopped }
            #expect(await supervisor.pickerEntries().isEmpty)
            let route = try await supervisor.activate("Attic Radio") { _ in nil }
            #expect(route.device.displayName == "Attic Radio")
            // Crashed: the restarted driver has forgotten it too.
            let pid = try #require(await harness.status("org.test.sleepy")?.pid)
            kill(pid, SIGKILL)
            try await harness.waitUntil("restarted") { await harness.status("org.test.sleepy")?.restarts == 1 }
            harness.mustBeGone(pid)
            let again = try await supervisor.activate("attic  radio") { _ in nil }
            #expect(again.device.displayName == "Attic Radio" && again.session != route.session)
        }
    }

    /// Activation discovers with a picker of its own and closes it before the driver answers: a
    /// person slow to type a code must not find the driver stopped as idle meanwhile.
    @Test func aDriverIsNotIdleWhileAnActivationWaitsForThePerson() async throws {
        try await SupervisorHarness.run { harness in
            try harness.addDriver("org.test.slowcode", devices: ["Secure Box"],
                                  timeouts: ["idleExitMilliseconds": 100, "heartbeatIntervalMilliseconds": 1000, "heartbeatTimeoutMilliseconds": 2000])
            let supervisor = try await harness.start()
            let route = try await supervisor.activate("Secure Box") { _ in
                // The person types once the driver's idle time has passed at least once.
                try? await harness.waitUntil("idle time passed during pairing") { harness.log.contains("an activation through it is under way") }
                return "4321"
            }
            #expect(route.device.displayName == "Secure Box")
            #expect(await harness.status("org.test.slowcode")?.state == .running)
            #expect(await supervisor.activeRoutes().count == 1)
        }
    }

    @Test func discoveringOnDemandWaitsForASlowDriverToStart() async throws {
        try await SupervisorHarness.run { harness in
            // The driver takes longer to start than the whole window: the window counts from
            // when it discovers, not from the request (a busy machine once used it all up).
            try harness.addDriver("org.test.slowstart", devices: ["Attic TV"], flags: ["--start-delay", "800"])
            let supervisor = try await harness.start(discoveryOnDemand: .milliseconds(400))
            let route = try await supervisor.activate("Attic TV") { _ in nil }
            #expect(route.device.displayName == "Attic TV")
            await #expect(throws: MediaDeviceError.self) { try await supervisor.activate("Nowhere TV") { _ in nil } }
        }
    }

    @Test func aStateReportedRightAfterASessionStartedIsKept() async throws {
        try await SupervisorHarness.run { harness in
            try WireProbeDriver.install(in: harness, protocol: "org.test.quick")
            let supervisor = try await harness.start()
            _ = try await supervisor.activate(WireProbeDriver.deviceName) { _ in nil }
            // The probe reports "playing" in the same write as the start ("loading"): it was
            // dropped as belonging to the start, and the route said loading until the next report.
            let route = try await supervisor.startSession(WireProbeDriver.deviceName, url: "http://127.0.0.1/a.mp3")
            #expect(route.playback?.status.state == .playing)
            #expect(await supervisor.activeRoutes().first?.playback?.status.state == .playing)
        }
    }

    @Test func intentionalStopsSayWhatHappened() async throws {
        try await SupervisorHarness.run { harness in
            try harness.addDriver("org.test.steady", devices: ["Hall TV"])
            let supervisor = try await harness.start()
            _ = try await supervisor.call(driver: "org.test.steady", ToDriver.Ping())
            let pid = try #require(await harness.status("org.test.steady")?.pid)
            try await supervisor.restartDriver("org.test.steady")
            harness.mustBeGone(pid)
            let restarted = try #require(await harness.status("org.test.steady"))
            #expect(restarted.lastExit == "restarted by the operator")
            #expect(restarted.restarts == 0 && restarted.state == .running)
            try await supervisor.disableDriver("org.test.steady")
            #expect(await harness.status("org.test.steady")?.lastExit == "stopped by the operator")
        }
    }

    @Test func aDeviceThatDropsItsActivationEndsItsRoute() async throws {
        try await SupervisorHarness.run { harness in
            try harness.addDriver("org.test.flaky", devices: ["Den TV"])
            let supervisor = try await harness.start()
            let (ended, continuation) = AsyncStream<(String, RouteChangeReason, String)>.makeStream()
            _ = await supervisor.subscribe { event in
                if case .deactivated(let route, let reason, let message) = event { continuation.yield((route.device.displayName, reason, message)) }
            }
            let route = try await supervisor.activate("Den TV") { _ in nil }
            try harness.command("org.test.flaky", "drop:Den TV")
            var events = ended.makeAsyncIterator()
            let event = try #require(await events.next())
            #expect(event.0 == "Den TV" && event.1 == .oldDeviceUnavailable && event.2 == "Den TV restarted")
            #expect(await supervisor.activeRoutes().isEmpty)
            // The driver is told to release the session.
            try await harness.waitUntil("released") { harness.log.contains("test driver: deactivated Den TV (\(route.session))") }
            #expect(await harness.status("org.test.flaky")?.restarts == 0, "not a violation")
        }
    }

    @Test func aReportThatDoesNotDecodeNamesTheMethodAndTheMember() async throws {
        try await SupervisorHarness.run { harness in
            try harness.addDriver("org.test.sloppy", devices: ["Den TV"])
            let supervisor = try await harness.start()
            _ = try await supervisor.call(driver: "org.test.sloppy", ToDriver.Ping())
            try harness.command("org.test.sloppy", "bad-device")
            try await harness.waitUntil("killed") { await harness.status("org.test.sloppy")?.restarts == 1 }
            let exit = try #require(await harness.status("org.test.sloppy")?.lastExit)
            #expect(exit.contains("device.found: \"device.capabilities\": expected an array, got a string"), "\(exit)")
            #expect(await supervisor.pickerEntries().allSatisfy { $0.name != "Odd TV" })
        }
    }
}

extension Supervisor {
    func isStartingSession(_ session: String) -> Bool { routes[session]?.isStartingSession ?? false }
}
