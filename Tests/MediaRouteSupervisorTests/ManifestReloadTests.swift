import Foundation
import Glibc
import MediaRouteIPC
import Testing
import TestSupport

/// An operator edits a driver's manifest and sends SIGHUP (or runs `enable`): the daemon re-reads
/// it without restarting, and a manifest it refused before is used now.
@Suite("manifests re-read by a running mediarouted", .timeLimit(.minutes(2)))
struct ManifestReloadTests {
    @Test func aMendedManifestIsUsedAfterSIGHUP() async throws {
        try await DaemonHarness.run { harness in
            let path = harness.drivers.drivers + "/org.test.late.json"
            try Data("{\"protocol\": \"org.test.late\",".utf8).write(to: URL(fileURLWithPath: path))
            try await harness.start()
            let before = await harness.cli(["drivers"])
            #expect(before.output.contains("refused"), "\(before.output)")
            #expect(before.output.contains("org.test.late.json"), "\(before.output)")

            try harness.drivers.addDriver("org.test.late", devices: ["Late Lamp"])
            let daemon = try #require(harness.daemon)
            kill(daemon.pid, SIGHUP)
            try await waitUntil("the daemon re-read its manifests") { harness.log.contains("manifests re-read") }
            let devices = await harness.cli(["devices", "--until", "1", "--wait", "30"])
            #expect(devices.output.contains("Late Lamp"), "\(devices.output)\(devices.error)")
            let after = await harness.cli(["drivers"])
            #expect(!after.output.contains("refused"), "\(after.output)")
            #expect(daemon.exitIfEnded() == nil, "the daemon kept running")
        }
    }
}
