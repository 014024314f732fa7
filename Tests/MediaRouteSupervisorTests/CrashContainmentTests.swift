import Foundation
import MediaDevice
import MediaRouteIPC
@testable import MediaRouteSupervisor
import Testing
import TestSupport

@Suite("Supervisor: driver identity, discovery, crash containment", .timeLimit(.minutes(2)))
struct CrashContainmentTests {
    @Test func manifestsThatDisagreeAreRefusedAndTheOthersStart() async throws {
        try await SupervisorHarness.run { harness in
            try harness.addDriver("org.test.good", devices: ["Den TV"])
            try harness.addDriver("org.test.renamed", identifier: "org.test.other")
            try harness.addDriver("org.test.plain", conformsTo: ["public.data"])
            let supervisor = try await harness.start()
            let statuses = await supervisor.driverStatuses()
            let refused = statuses.compactMap { status -> String? in if case .refused(let why) = status.state { why } else { nil } }
            #expect(refused.contains("\"exportedType.identifier\" is \"org.test.other\" but \"protocol\" is \"org.test.renamed\"; the three names of a protocol must agree"))
            #expect(refused.contains("\"exportedType.conformsTo\" must contain \"public.media-sharing-protocol\""))
            #expect(harness.log.contains("refused driver manifest"))

            let view = PickerView()
            let picker = await supervisor.openPicker { view.update($0) }
            try await harness.waitUntil("Den TV listed") { view.names() == ["Den TV"] }
            #expect(await harness.status("org.test.good")?.state == .running)
            // The driver's stderr (and its stray print) reached the log under its name.
            try await harness.waitUntil("driver stderr logged") { harness.log.contains("[org.test.good] test driver org.test.good up") }
            #expect(harness.log.contains("[org.test.good] a stray print must not break the channel"))
            await supervisor.closePicker(picker.id)
        }
    }

    /// A driver whose handshake names another protocol than its manifest is a configuration error:
    /// it is told so with an error of its own (-32011), listed `refused`, and not retried like a
    /// crash; an edited manifest, re-read on reload (SIGHUP), lets it start.
    @Test func aDriverThatLiesAboutItsProtocolIsRefusedAtTheHandshakeUntilItsManifestChanges() async throws {
        try await SupervisorHarness.run { harness in
            try harness.addDriver("org.test.honest", devices: ["Hall Speaker"])
            try harness.addDriver("org.test.liar", devices: ["Liar Lamp"], claims: "org.test.someone-else")
            let supervisor = try await harness.start()
            let view = PickerView()
            let picker = await supervisor.openPicker { view.update($0) }
            try await harness.waitUntil("liar refused") { if case .refused = await harness.status("org.test.liar")?.state { true } else { false } }
            let status = try #require(await harness.status("org.test.liar"))
            let why = try #require({ if case .refused(let why) = status.state { why } else { nil } }())
            #expect(why.contains("says its protocol is \"org.test.someone-else\" but its manifest"))
            #expect(status.restarts == 0, "a configuration error is not a crash: no restart")
            try await harness.waitUntil("the driver heard why") { harness.log.all.contains { $0.contains("[org.test.liar]") && $0.contains("code -32011") } }
            try await harness.waitUntil("honest device listed") { view.names() == ["Hall Speaker"] }
            #expect(await harness.status("org.test.liar")?.restarts == 0)
            // The manifest is mended: a reload (what SIGHUP does) lets the driver start and discover.
            try harness.addDriver("org.test.liar", devices: ["Liar Lamp"])
            await supervisor.reloadManifests()
            try await harness.waitUntil("mended driver discovers") { view.names() == ["Hall Speaker", "Liar Lamp"] }
            await supervisor.closePicker(picker.id)
        }
    }

    /// A driver that ends the moment its handshake is answered may be reported before the
    /// supervisor has marked it running: each exit must still count against its budget, never
    /// leaving it listed as running with a dead process (seen in CI under load).
    @Test func aDriverThatExitsRightAfterItsHandshakeUsesUpItsRestartBudget() async throws {
        try await SupervisorHarness.run { harness in
            try WireProbeDriver.install(in: harness, protocol: "org.test.brief", exitAfterHello: true,
                                        restart: ["intensity": 4, "periodSeconds": 60, "initialBackoffMilliseconds": 10, "maximumBackoffMilliseconds": 20])
            let supervisor = try await harness.start()
            let picker = await supervisor.openPicker { _ in }
            try await harness.waitUntil("the driver failed after its budget") { if case .failed = await harness.status("org.test.brief")?.state { true } else { false } }
            let status = try #require(await harness.status("org.test.brief"))
            #expect(status.restarts == 4, "four restarts, then the fifth exit within the period spends the budget")
            #expect(status.lastExit?.contains("exited with status 5") == true, "\(status.lastExit ?? "no exit")")
            await supervisor.closePicker(picker.id)
        }
    }

    @Test func aDeviceSeenByTwoDriversIsOneEntryWithAPersistedPreference() async throws {
        try await SupervisorHarness.run { harness in
            try harness.addDriver("org.test.alpha", devices: ["Living Room TV", "Kitchen Speaker"])
            try harness.addDriver("org.test.beta", devices: ["living room  tv"])
            var supervisor = try await harness.start()
            let view = PickerView()
            var picker = await supervisor.openPicker { view.update($0) }
            try await harness.waitUntil("both drivers report") { view.current.first { $0.name == "Living Room TV" }?.routes.count == 2 }
            let entry = try #require(view.current.first { $0.name == "Living Room TV" })
            #expect(view.current.count == 2)
            #expect(entry.routes.map(\.protocolID) == ["org.test.alpha", "org.test.beta"])
            #expect(entry.preferredProtocol == "org.test.alpha")
            try await supervisor.setPreferredProtocol("org.test.beta", forDevice: "LIVING ROOM TV")
            try await harness.waitUntil("picker shows the preference") { view.current.first { $0.name == "Living Room TV" }?.preferredProtocol == "org.test.beta" }
            await #expect(throws: MediaDeviceError.self) { try await supervisor.setPreferredProtocol("org.test.beta", forDevice: "Kitchen Speaker") }
            await supervisor.closePicker(picker.id)
            await harness.tearDown()

            // A new supervisor on the same state directory remembers the choice.
            try FileManager.default.createDirectory(atPath: harness.drivers, withIntermediateDirectories: true)
            try harness.addDriver("org.test.alpha", devices: ["Living Room TV"])
            try harness.addDriver("org.test.beta", devices: ["Living Room TV"])
            supervisor = try await harness.start()
            picker = await supervisor.openPicker { view.update($0) }
            try await harness.waitUntil("preference restored") { view.current.first?.routes.count == 2 && view.current.first?.preferredProtocol == "org.test.beta" }
            await supervisor.closePicker(picker.id)
        }
    }

    /// What each fault leaves in the faulty driver's last exit.
    static let faults: [(command: String, lastExit: String)] = [
        ("segv", "killed by signal 11"),
        ("abort", "killed by signal 6"),
        ("exit", "exited with status 3"),
        ("hang", "hung: no heartbeat answer within 400 ms"),
        ("flood", "violated the protocol: flooding: more than 5000 messages within one second"),
        ("garbage", "violated the protocol"),
        ("lie-device", "violated the protocol: reported a device of protocol org.other.protocol"),
        ("bad-reply", "violated the protocol: "),
        ("kill -9 from outside", "killed by signal 9"),
        ("close-channel", "closed its IPC channel (killed by signal 9"),
    ]

    /// One fault at a time: each starts and crashes real processes, and two cores are shared with the other suites.
    @Test(.serialized, arguments: faults.map(\.command))
    func aFaultyDriverIsRestartedAndTheHealthyOneIsUntouched(_ command: String) async throws {
        let expected = Self.faults.first { $0.command == command }!.lastExit
        try await SupervisorHarness.run { harness in
            // The healthy driver keeps production heartbeat settings: a faulty neighbour hogging one of two
            // cores must not get it killed as hung.
            try harness.addDriver("org.test.healthy", devices: ["Bedroom TV"],
                                  timeouts: ["heartbeatIntervalMilliseconds": 1000, "heartbeatTimeoutMilliseconds": 2000])
            // A flooding driver is also too busy to answer heartbeats; give flood detection the time to
            // name the real fault. Only the hang needs the short timeout: for the other faults it would
            // call the driver hung when a busy CI machine delays one answer (seen: the device then went
            // missing before the test could activate it).
            let heartbeatTimeout: Int64 = switch command { case "flood": 5000; case "hang": 400; default: 2000 }
            try harness.addDriver("org.test.faulty", devices: ["Garage Speaker"],
                                  timeouts: ["heartbeatIntervalMilliseconds": 200, "heartbeatTimeoutMilliseconds": .integer(heartbeatTimeout)])
            let supervisor = try await harness.start()
            let view = PickerView()
            let picker = await supervisor.openPicker { view.update($0) }
            try await harness.waitUntil("both devices listed") { view.names() == ["Bedroom TV", "Garage Speaker"] }
            let healthyPID = try #require(await harness.status("org.test.healthy")?.pid)
            let faultyPID = try #require(await harness.status("org.test.faulty")?.pid)
            // Each driver leads a process group of its own (signals reach it and its children, and a
            // terminal's Ctrl-C does not).
            #expect(getpgid(healthyPID) == healthyPID && getpgid(faultyPID) == faultyPID)
            // A session on each driver: the faulty one's must end with the reason, the healthy one's must not notice.
            _ = try await supervisor.activate("Bedroom TV") { _ in nil }
            _ = try await supervisor.startSession("Bedroom TV", url: "http://127.0.0.1:9/show.mp4")
            _ = try await supervisor.activate("Garage Speaker") { _ in nil }

            if command.hasPrefix("kill") { kill(faultyPID, SIGKILL) } else { try harness.command("org.test.faulty", command) }

            try await harness.waitUntil("faulty restarted") {
                guard let status = await harness.status("org.test.faulty") else { return false }
                return status.restarts == 1 && status.state == .running && status.pid != faultyPID
            }
            let status = try #require(await harness.status("org.test.faulty"))
            #expect(status.lastExit?.contains(expected) == true, "last exit: \(status.lastExit ?? "none")")
            // A crash closes the channel as the process dies: the close, if seen first, is not its reason.
            #expect(command == "close-channel" || status.lastExit?.contains("closed its IPC channel") == false, "last exit: \(status.lastExit ?? "none")")
            #expect(kill(faultyPID, 0) != 0, "the old process is gone")
            // Rediscovered after the restart, because the picker is still open.
            try await harness.waitUntil("faulty device back") { view.names().contains("Garage Speaker") }
            // The healthy driver never noticed.
            let healthy = try #require(await harness.status("org.test.healthy"))
            #expect(healthy.pid == healthyPID && healthy.restarts == 0 && healthy.state == .running)
            #expect(view.names().contains("Bedroom TV"))
            #expect(harness.log.contains("driver org.test.faulty"))
            // The faulty driver's route was deactivated, with the reason; the healthy session still plays and obeys.
            let routes = await supervisor.activeRoutes().map(\.device.displayName)
            #expect(routes == ["Bedroom TV"])
            #expect(await supervisor.recentEvents.contains { $0.hasPrefix("Garage Speaker deactivated: ") && $0.contains(expected) })
            let paused = try await supervisor.setPlayback("Bedroom TV", PlaybackChanges(isPlaying: false))
            #expect(paused.playback?.status.state == .paused)
            #expect(try await supervisor.volume("Bedroom TV", .set(0.25)).volume == 0.25)
            await supervisor.closePicker(picker.id)
            harness.mustBeGone(faultyPID)
        }
    }

    @Test func aRequestInFlightWhenTheDriverCrashesNamesTheSignal() async throws {
        try await SupervisorHarness.run { harness in
            try harness.addDriver("org.test.fragile", flags: ["--crash-on-discovery"],
                                  restart: ["intensity": 1, "periodSeconds": 60, "initialBackoffMilliseconds": 10, "maximumBackoffMilliseconds": 10])
            let supervisor = try await harness.start()
            do {
                _ = try await supervisor.call(driver: "org.test.fragile", ToDriver.StartDiscovery())
                Issue.record("discovery succeeded")
            } catch let error as MediaDeviceError {
                #expect(error.code == .driverFailed)
                #expect(error.message.hasPrefix("driver org.test.fragile (pid "))
                #expect(error.message.hasSuffix("killed by signal 11 (Segmentation fault) while handling \"discovery.start\""))
            }
        }
    }

    @Test func pastTheRestartBudgetADriverStaysDownUntilEnabled() async throws {
        try await SupervisorHarness.run { harness in
            try harness.addDriver("org.test.doomed", flags: ["--crash-on-start"],
                                  restart: ["intensity": 2, "periodSeconds": 60, "initialBackoffMilliseconds": 10, "maximumBackoffMilliseconds": 40])
            let supervisor = try await harness.start()
            let picker = await supervisor.openPicker { _ in }
            try await harness.waitUntil("budget spent") { if case .failed = await harness.status("org.test.doomed")?.state { true } else { false } }
            let failed = try #require(await harness.status("org.test.doomed"))
            #expect(failed.restarts == 2)
            #expect(failed.lastExit?.contains("could not start") == true || failed.lastExit?.contains("signal 6") == true, "\(failed.lastExit ?? "")")
            #expect(harness.log.contains("stays down until `mediaroute enable org.test.doomed`"))
            // Still down a while later: no restarts past the budget.
            try await Task.sleep(for: .milliseconds(200))
            #expect(await harness.status("org.test.doomed")?.restarts == 2)
            // The operator enables it: a fresh budget, so it is tried (and fails) again.
            try await supervisor.enableDriver("org.test.doomed")
            try await harness.waitUntil("tried again") { (await harness.status("org.test.doomed")?.restarts ?? 0) > 2 }
            await supervisor.closePicker(picker.id)
        }
    }

    @Test func idleDriversExitAndThatIsNotACrash() async throws {
        try await SupervisorHarness.run { harness in
            try harness.addDriver("org.test.sleepy", devices: ["Attic Radio"],
                                  timeouts: ["idleExitMilliseconds": 300, "heartbeatIntervalMilliseconds": 1000])
            let supervisor = try await harness.start()
            let view = PickerView()
            let picker = await supervisor.openPicker { view.update($0) }
            try await harness.waitUntil("listed") { view.names() == ["Attic Radio"] }
            let pid = try #require(await harness.status("org.test.sleepy")?.pid)
            await supervisor.closePicker(picker.id)
            try await harness.waitUntil("idle exit") { await harness.status("org.test.sleepy")?.state == .stopped }
            let status = try #require(await harness.status("org.test.sleepy"))
            #expect(status.restarts == 0, "\(status.lastExit ?? "-") | \(harness.log.all.suffix(10))")
            #expect(status.lastExit == "exited when idle", "an idle exit is said as such, not as a signal")
            #expect(kill(pid, 0) != 0)
        }
    }

    @Test func disabledDriversStayDisabledAcrossSupervisorRestarts() async throws {
        try await SupervisorHarness.run { harness in
            try harness.addDriver("org.test.optional", devices: ["Porch Speaker"])
            var supervisor = try await harness.start()
            try await supervisor.disableDriver("org.test.optional")
            await supervisor.shutdown()
            supervisor = try await harness.start()  // as after a restart (state.json is written synchronously)
            #expect(await harness.status("org.test.optional")?.state == .disabled)
            // A second, enabled driver proves discovery ran: once its device is listed, the disabled
            // driver had the same chance to start and did not.
            try harness.addDriver("org.test.witness", devices: ["Witness Radio"])
            await supervisor.reloadManifests()
            let view = PickerView()
            let picker = await supervisor.openPicker { view.update($0) }
            try await harness.waitUntil("the enabled driver discovered") { view.names() == ["Witness Radio"] }
            #expect(await harness.status("org.test.optional")?.state == .disabled)
            #expect(await harness.status("org.test.optional")?.pid == nil)
            try await supervisor.enableDriver("org.test.optional")
            try await harness.waitUntil("enabled and discovering") { view.names() == ["Witness Radio", "Porch Speaker"] }
            await supervisor.closePicker(picker.id)
        }
    }

    /// The driver's own state changes (here: position advancing while it plays) reach the system on
    /// the SDK's cadence, without the system asking.
    @Test func playbackStateFlowsFromTheDriverOnItsCadence() async throws {
        try await SupervisorHarness.run { harness in
            try harness.addDriver("org.test.player", devices: ["Lounge TV"])
            let supervisor = try await harness.start()
            let picker = await supervisor.openPicker { _ in }
            try await harness.waitUntil("listed") { await supervisor.pickerEntries().count == 1 }
            _ = try await supervisor.activate("Lounge TV") { _ in nil }
            let started = try await supervisor.startSession("Lounge TV", url: "http://127.0.0.1:9/clip.mp4")
            #expect(started.playback?.status.metadata == AVInterfaceMetadata(title: "Test Pattern", artist: "MediaRoute"))
            try await harness.waitUntil("position advanced by itself") {
                let position = await supervisor.activeRoutes().first?.playback?.status.position ?? 0
                return position >= 0.5
            }
            await supervisor.closePicker(picker.id)
        }
    }

    /// Data from an app reaches the device's application through the driver (`receiveData` ->
    /// `sendData`), and the application's answer comes back through `routingManager.sendData`.
    @Test func dataTravelsToTheDevicesApplicationAndBack() async throws {
        try await SupervisorHarness.run { harness in
            try harness.addDriver("org.test.data", devices: ["Hall TV"])
            let supervisor = try await harness.start()
            let (answers, continuation) = AsyncStream<(String, String, [UInt8])>.makeStream()
            _ = await supervisor.subscribe { event in
                if case .data(_, let session, _, let application, _, let data) = event { continuation.yield((session, application, [UInt8](data.bytes))) }
            }
            let picker = await supervisor.openPicker { _ in }
            try await harness.waitUntil("listed") { await supervisor.pickerEntries().count == 1 }
            let route = try await supervisor.activate("Hall TV") { _ in nil }
            let session = route.session
            try await supervisor.sendData(Array("hello, device".utf8), toApplication: "echo", device: "Hall TV")
            var iterator = answers.makeAsyncIterator()
            let answer = try #require(await iterator.next())
            #expect(answer.0 == session && answer.1 == "echo" && answer.2 == Array("ecived ,olleh".utf8))
            await #expect(throws: MediaDeviceError.self) {
                try await supervisor.sendData([UInt8](repeating: 0, count: Supervisor.maximumDataMessage + 1), toApplication: "echo", device: "Hall TV")
            }
            await supervisor.closePicker(picker.id)
        }
    }
}
