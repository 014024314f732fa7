import Foundation
import Glibc
import MediaRouteIPC
import Testing
import TestSupport

/// The real `mediarouted` started as systemd starts a `Type=notify` service with a watchdog: its
/// `NOTIFY_SOCKET` is a socket this test owns.
@Suite("mediarouted tells systemd how it is: READY, STATUS, the watchdog, STOPPING", .timeLimit(.minutes(1)))
struct ServiceNotifyTests {
    /// WATCHDOG_USEC of 200 ms: a ping every 100 ms.
    static let watchdog = ["WATCHDOG_USEC": "200000"]

    @Test func readyComesOnceTheSocketAnswersThenStatusWatchdogPingsAndStoppingAtSIGTERM() async throws {
        let inbox = try DatagramInbox(name: NSTemporaryDirectory() + "mediaroute-notify-\(UUID().uuidString.prefix(8))")
        defer { inbox.close() }
        try await DaemonHarness.run { harness in
            try harness.drivers.addDriver("org.test.alpha", devices: ["Living Room TV"])
            try await harness.start(environment: Self.watchdog.merging(["NOTIFY_SOCKET": inbox.name]) { $1 })

            try await waitUntil("READY=1", seconds: 10) { !inbox.with(line: "READY=1").isEmpty }
            let fd = try UnixSocket.connect(path: harness.socket)  // it answers once ready was said
            close(fd)
            let ready = try #require(inbox.with(line: "READY=1").first)
            #expect(ready.text.contains("STATUS=0 of 1 driver running; 0 routes active"), "\(ready.text)")
            #expect(inbox.with(line: "READY=1").count == 1)

            // Pings at about 10 a second, counted over 2 s after the first ones (generously bounded:
            // the machine is shared).
            let windowStart = ContinuousClock.now
            try await Task.sleep(for: .seconds(2))  // the window being measured, not a wait for an event
            let pings = inbox.with(line: "WATCHDOG=1").filter { $0.at >= windowStart && $0.at < windowStart + .seconds(2) }.count
            #expect((10...30).contains(pings), "\(pings) pings in 2 s at a 100 ms interval")

            // STATUS follows what happens: a route made active shows within the reporting period.
            let activated = await harness.cli(["activate", "Living Room TV"])
            #expect(activated.status == .exited(0), "\(activated.error)")
            try await waitUntil("STATUS with the route", seconds: 10) {
                !inbox.with(line: "STATUS=1 of 1 driver running; 1 route active").isEmpty
            }
            // The driver it started does not inherit the daemon's link to systemd.
            let drivers = await harness.cli(["drivers", "--json"]).json?.objectValue?["drivers"]?.arrayValue ?? []
            let driverPID = try #require(drivers.first?.objectValue?["pid"]?.integerValue, "\(drivers)")
            let environment = try String(decoding: Data(contentsOf: URL(fileURLWithPath: "/proc/\(driverPID)/environ")), as: UTF8.self)
            #expect(!environment.contains("NOTIFY_SOCKET=") && !environment.contains("WATCHDOG_USEC="))
            let statuses = inbox.all.flatMap { $0.text.split(separator: "\n") }.filter { $0.hasPrefix("STATUS=") }
            #expect(!zip(statuses, statuses.dropFirst()).contains { $0 == $1 }, "a STATUS line sent only when it changed: \(statuses)")

            let daemon = try #require(harness.daemon)
            daemon.signal(SIGTERM)
            #expect(await daemon.exitStatus() == .exited(0))
            let stopping = try #require(inbox.with(line: "STOPPING=1").first, "no STOPPING=1 in \(inbox.all.map(\.text))")
            #expect(stopping.at > ready.at)
        }
    }

    /// A wedged event loop stops the pings: the debug build's SIGUSR2 blocks the loop's thread
    /// for 1.5 s while the rest of the process runs; no ping may come in that time, and they
    /// come again after it. (systemd would have killed it after WatchdogSec.)
    @Test(.enabled(if: debugBuild, "the loop wedge exists in debug builds only"))
    func aWedgedLoopSendsNoPings() async throws {
        let inbox = try DatagramInbox(name: "@mediaroute-notify-\(UUID().uuidString.prefix(8))")  // the abstract namespace
        defer { inbox.close() }
        try await DaemonHarness.run { harness in
            try await harness.start(environment: Self.watchdog.merging(["NOTIFY_SOCKET": inbox.name, "MEDIAROUTE_DEBUG_WEDGE_MILLISECONDS": "1500"]) { $1 })
            try await waitUntil("pings", seconds: 10) { inbox.with(line: "WATCHDOG=1").count >= 3 }
            let daemon = try #require(harness.daemon)
            let signalled = ContinuousClock.now
            daemon.signal(SIGUSR2)
            try await waitUntil("pings after the wedge", seconds: 10) {
                inbox.with(line: "WATCHDOG=1").filter { $0.at > signalled + .milliseconds(1500) }.count >= 3
            }
            let times = inbox.with(line: "WATCHDOG=1").map(\.at).filter { $0 > signalled - .milliseconds(300) }
            let longestGap = zip(times, times.dropFirst()).map { $1 - $0 }.max() ?? .zero
            // 1.5 s without a ping, less what the loop had already begun; never the 100 ms of a running loop.
            #expect(longestGap >= .milliseconds(1300), "longest gap between pings around the wedge: \(longestGap)")
            #expect(longestGap < .seconds(5))
            // The daemon itself went on: it still answers, and stops cleanly.
            #expect(await harness.cli(["status"]).status == .exited(0))
            daemon.signal(SIGTERM)
            #expect(await daemon.exitStatus() == .exited(0))
        }
    }

    /// No NOTIFY_SOCKET, or one that names nothing usable: the daemon runs as before.
    @Test func aDaemonNotStartedBySystemdRunsAsBefore() async throws {
        try await DaemonHarness.run { harness in
            try await harness.start(environment: ["NOTIFY_SOCKET": "relative/path"])
            #expect(await harness.cli(["status"]).status == .exited(0))
            await harness.stop()
            #expect(harness.log.contains("NOTIFY_SOCKET is \"relative/path\", neither an absolute path nor an abstract name"), "\(harness.log)")
        }
    }
}

#if DEBUG
let debugBuild = true
#else
let debugBuild = false
#endif
