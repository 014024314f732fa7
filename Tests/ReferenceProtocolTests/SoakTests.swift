import Foundation
import Glibc
import MediaRouteIPC
import PrivateDaemons
import ReferenceProtocol
import Testing
import TestSupport

/// Apps and the CLI against two drivers (the reference driver with two real receivers, and a test
/// driver) for a fixed number of cycles, with a driver crash in the middle: afterwards the daemon's
/// memory and descriptors are back where they were after the first cycle, nothing plays on any
/// receiver, and no process is left. `MEDIAROUTE_SOAK_CYCLES` sets the cycles (`make soak`).
@Suite("Soak: apps, the CLI and two drivers, cycle after cycle", .serialized, .timeLimit(.minutes(30)))
struct SoakTests {
    static let cycles = max(2, Int(ProcessInfo.processInfo.environment["MEDIAROUTE_SOAK_CYCLES"] ?? "") ?? 3)

    /// Everything the soak runs against, stopped by PID whatever happens.
    /// `@unchecked Sendable`: its lists change only in the test's own sequential flow (set-up, the
    /// cycles, tear-down), never from two tasks at once; the compiler cannot see that ordering.
    final class Stage: @unchecked Sendable {
        let daemon: DaemonHarness
        let avahi: PrivateAvahi
        var media: MediaFileServer?
        var receivers: [ReceiverProcess] = []
        var players: [ConsoleProcess] = []
        var root: String { daemon.drivers.root }

        init() async throws {
            daemon = try DaemonHarness()
            avahi = try await PrivateAvahi()
        }

        func setUp() async throws {
            try FileManager.default.createDirectory(atPath: root + "/media", withIntermediateDirectories: true)
            try await MediaFileServer.makeTone(at: root + "/media/tone.wav", seconds: 30, title: "Soak Tone")
            media = try await MediaFileServer(directory: root + "/media")
            let manifest = ReferenceProtocol.driverManifest(executable: DaemonHarness.binary("mediaroute-reference-driver"),
                                                            environment: ["DBUS_SYSTEM_BUS_ADDRESS": avahi.busAddress, "SWIFT_BACKTRACE": "enable=no"])
            try Data(JSONWriter.encode(manifest)).write(to: URL(fileURLWithPath: daemon.drivers.drivers + "/reference.json"))
            try daemon.drivers.addDriver("org.test.alpha", devices: ["Attic TV"])
            for name in ["Den TV", "Hall Speaker"] {
                let receiver = try ReceiverProcess(name: name, avahi: avahi, root: root, arguments: ["--auth", "none"])
                receivers.append(receiver)
                try await receiver.waitUntilAnnounced()
            }
            try await daemon.start()
        }

        func player(_ arguments: [String], log: String) throws -> ConsoleProcess {
            let player = try ConsoleProcess(DaemonHarness.binary("mediaroute-player"), ["--socket", daemon.socket] + arguments, logPath: root + "/" + log)
            players.append(player)
            return player
        }

        /// Runs the CLI and requires success.
        @discardableResult
        func cli(_ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) async throws -> DaemonHarness.Result {
            let result = await daemon.cli(arguments)
            try #require(result.status == .exited(0), "mediaroute \(arguments.joined(separator: " ")): \(result.error)", sourceLocation: sourceLocation)
            return result
        }

        func driverPIDs() async -> [Int32] {
            let drivers = await daemon.cli(["drivers", "--json"]).json?.objectValue?["drivers"]?.arrayValue ?? []
            return drivers.compactMap { $0.objectValue?["pid"]?.integerValue.map { Int32($0) } }
        }

        func tearDown() async {
            for player in players { await player.stop() }
            for receiver in receivers { await receiver.stop() }
            await daemon.tearDown()
            await media?.stop()
            await avahi.stop()
        }
    }

    /// One cycle: the CLI discovers and activates; an app plays on each driver's device, seeks,
    /// changes the volume and exchanges data; the CLI plays on the second receiver; everything is
    /// stopped and deactivated. With `crash`, the test driver is killed while its app plays.
    private func cycle(_ stage: Stage, number: Int, crash: Bool) async throws {
        let tone = try #require(stage.media?.url("tone.wav"))
        let listed = try await stage.cli(["devices", "--wait", "20", "--until", "3", "--json"])
        #expect(Set(listed.json?.arrayValue?.compactMap { $0.objectValue?["name"]?.stringValue } ?? []) == ["Den TV", "Hall Speaker", "Attic TV"])
        try await stage.cli(["activate", "Den TV"])
        try await stage.cli(["activate", "Attic TV"])

        let echo = try stage.player(["--protocol", ReferenceProtocol.protocolID, "--app-id", "org.mediaroute.echo", "--mode", "application", tone],
                                    log: "echo-\(number).out")
        let notes = try stage.player(["--protocol", "org.test.alpha", "--app-id", "org.test.notes", "--mode", "application",
                                      "http://127.0.0.1:9/film.mp4"], log: "notes-\(number).out")
        try await echo.waitFor("route active: Den TV")
        try await echo.waitFor("state: playing")
        echo.type("seek 2")
        echo.type("volume 30")
        try await echo.waitFor("volume 30%")
        echo.type("send hi \(number)")
        try await echo.waitFor("data: hi \(number)")
        try await notes.waitFor("state: playing")
        notes.type("send hello")
        try await notes.waitFor("data: olleh")
        notes.type("pause")
        try await notes.waitFor("state: paused")

        echo.type("quit")
        #expect(await echo.process.exitStatus() == .exited(0), "\(echo.output)")
        // The reference driver runs one activation at a time: the other receiver is the CLI's next.
        try await stage.cli(["deactivate", "Den TV"])
        try await stage.cli(["activate", "Hall Speaker"])
        try await stage.cli(["play", tone, "--to", "Hall Speaker"])
        try await stage.cli(["volume", "Hall Speaker", "40"])
        try await stage.cli(["seek", "1", "--on", "Hall Speaker"])
        try await stage.cli(["pause", "--on", "Hall Speaker"])
        try await stage.cli(["stop", "--on", "Hall Speaker"])
        try await stage.cli(["deactivate", "Hall Speaker"])

        if crash {
            let drivers = await stage.daemon.cli(["drivers", "--json"]).json?.objectValue?["drivers"]?.arrayValue ?? []
            let alpha = try #require(drivers.first { $0.objectValue?["protocol"] == "org.test.alpha" }?.objectValue?["pid"]?.integerValue)
            kill(Int32(alpha), SIGKILL)
            try await notes.waitFor("route inactive: Attic TV")
            try await waitUntil("the test driver restarted") {
                let now = await stage.daemon.cli(["drivers", "--json"]).json?.objectValue?["drivers"]?.arrayValue ?? []
                let restarted = now.first { $0.objectValue?["protocol"] == "org.test.alpha" }?.objectValue
                return restarted?["state"] == "running" && restarted?["pid"]?.integerValue != alpha
            }
        }
        notes.type("quit")
        #expect(await notes.process.exitStatus() == .exited(0), "\(notes.output)")
        if !crash { try await stage.cli(["deactivate", "Attic TV"]) }
        let routes = try await stage.cli(["sessions", "--json"]).json?.objectValue?["routes"]?.arrayValue
        #expect(routes?.isEmpty == true, "routes left after cycle \(number): \(String(describing: routes))")
    }

    @Test func cyclesLeaveTheDaemonAsTheyFoundItAndNothingPlaying() async throws {
        let stage = try await Stage()
        try await withTearDown {
            try await stage.setUp()
            try await cycle(stage, number: 1, crash: false)
            // What the first cycle set up for good (driver processes, first-use allocations) is the baseline.
            let memory = try #require(stage.daemon.residentKiB)
            let descriptors = try #require(stage.daemon.openDescriptors)
            for number in 2...Self.cycles {
                try await cycle(stage, number: number, crash: number == Self.cycles / 2 + 1)
            }
            for receiver in stage.receivers { try await receiver.statusShows("nothing playing") }
            try await waitUntil("the daemon back within 6 MiB of \(memory) KiB and \(descriptors) descriptors") {
                guard let now = stage.daemon.residentKiB, let open = stage.daemon.openDescriptors else { return false }
                return now < memory + 6 * 1024 && open <= descriptors
            }
            let drivers = await stage.driverPIDs()
            await stage.daemon.stop()
            for pid in drivers { #expect(kill(pid, 0) != 0, "driver pid \(pid) outlived the daemon") }
            for player in stage.players { #expect(player.process.exitIfEnded() != nil, "a player is still running") }
        } tearDown: {
            await stage.tearDown()
        }
    }
}
