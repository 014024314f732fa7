import Foundation
import MediaRouteIPC
import PrivateDaemons
import Testing
import TestSupport

/// The conformance kit run for real on every driver we have: the test driver and the Python
/// example (devices of their own, every section), the drivers in Protocols/ without their peers
/// (the device-independent sections; the rest skipped, with the reason), and the reference driver
/// with real receivers on a private Avahi.
@Suite("Conformance kit", .serialized)
struct ConformanceKitTests {
    /// Sections every driver must pass with or without devices.
    static let deviceIndependent: Set<String> = ["Manifest", "§2 Framing", "§3 Messages", "§4 Handshake", "§5 File descriptors", "§7 Cancellation",
                                                 "§8 Violations", "§11 Heartbeats", "§11.2 Discovery", "§11.2 The driver's process"]

    private func expectAllPassed(_ run: KitRun, sections: Set<String>, _ comment: String = "") {
        #expect(run.status == .exited(0), "the kit \(run.status); \(comment)\nfailed:\n\(run.checks("fail").joined(separator: "\n"))\n\(run.errorOutput.suffix(2000))")
        #expect(run.count("failed") == 0, "failed:\n\(run.checks("fail").joined(separator: "\n"))")
        #expect(sections.isSubset(of: run.passedSections), "sections with no pass: \(sections.subtracting(run.passedSections).sorted())")
    }

    @Test("the test driver passes every section it has devices for", .timeLimit(.minutes(2)))
    func testDriver() async throws {
        try await inScratch { directory in
            let manifest = try writeTestDriverManifest(in: directory, protocolID: "org.mediaroute.test", claims: "org.mediaroute.test")
            let run = try await KitRun.run(manifest, ["--pairing-code", "4321"])
            expectAllPassed(run, sections: Self.deviceIndependent.union(["§11.2 Activation and pairing", "§11.2 Sessions and playback",
                                                                         "§11.2 Volume", "§11.2 Data", "§11.2 Deactivation"]))
            // Its devices take URLs only: the sample streams are what it skips, and says why.
            #expect(run.checks("skip").allSatisfy { $0.hasPrefix("§11.5 and §13 Sample streams") && $0.contains("has no realtime") }, "\(run.checks("skip"))")
        }
    }

    @Test("the Python example driver passes every section, sample streams included", .timeLimit(.minutes(2)))
    func pythonDriver() async throws {
        let manifest = KitRun.repository + "/IPC/Examples/python-driver/org.mediaroute.example.lamp.json"
        let run = try await KitRun.run(manifest, ["--pairing-code", "2468"])
        expectAllPassed(run, sections: Self.deviceIndependent.union(["§11.2 Activation and pairing", "§11.2 Sessions and playback", "§11.2 Volume",
                                                                     "§11.2 Data", "§11.2 Deactivation", "§11.5 and §13 Sample streams"]))
        #expect(run.checks("skip").allSatisfy { $0.contains("no realtimeVideoStreaming") }, "\(run.checks("skip"))")
    }

    /// Without their peers (no Avahi, BlueZ or renderer in reach) discovery finds nothing or
    /// fails; everything that needs a device is skipped, saying so.
    @Test("every driver in Protocols/ passes the device-independent sections", .timeLimit(.minutes(3)),
          arguments: ["Reference/org.mediaroute.reference.json", "DLNA/org.mediaroute.dlna.json",
                      "Bluetooth/org.mediaroute.bluetooth.json", "AirPlay/org.mediaroute.airplay.json"])
    func protocolDriver(_ manifest: String) async throws {
        try await inScratch { directory in
            // A bus address that answers nothing: the drivers must not reach the machine's own daemons.
            let installed = try KitRun.installedCopy(of: KitRun.repository + "/Protocols/" + manifest, in: directory,
                                                     environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=\(directory)/no-bus"])
            let run = try await KitRun.run(installed, ["--discovery-seconds", "1"])
            expectAllPassed(run, sections: Self.deviceIndependent, manifest)
            #expect(run.checks("skip").allSatisfy { $0.contains("no device") || $0.contains("discovery failed") || $0.contains("found no device") },
                    "\(run.checks("skip"))")
        }
    }

    @Test("the reference driver with real receivers: activation, pairing refused and cancelled, sessions, volume, streams", .timeLimit(.minutes(3)))
    func referenceDriverWithReceivers() async throws {
        let avahi = try await PrivateAvahi()
        try await withTearDown {
            try await inScratch { directory in
                let media = try await Self.tone(in: directory)
                try await withTearDown {
                    let open = try ReceiverProcess(name: "Open TV", avahi: avahi, root: directory, arguments: ["--auth", "none"])
                    let secure = try ReceiverProcess(name: "Secure TV", avahi: avahi, root: directory)
                    try await withTearDown {
                        try await open.waitUntilAnnounced()
                        try await secure.waitUntilAnnounced()
                        let manifest = try KitRun.installedCopy(of: KitRun.repository + "/Protocols/Reference/org.mediaroute.reference.json", in: directory,
                                                               environment: avahi.environment)
                        // The receiver makes a new code for every pairing: the right-code check is the one skipped.
                        let run = try await KitRun.run(manifest, ["--discovery-seconds", "10", "--url", media.url("tone.wav"),
                                                                  "--application", "org.mediaroute.echo"])
                        expectAllPassed(run, sections: Self.deviceIndependent.union(["§11.2 Activation and pairing", "§11.2 Sessions and playback", "§11.2 Data",
                                                                                     "§11.2 Volume", "§11.2 Deactivation", "§11.5 and §13 Sample streams"]))
                    } tearDown: {
                        await open.stop()
                        await secure.stop()
                    }
                } tearDown: { await media.stop() }
            }
        } tearDown: { await avahi.stop() }
    }

    @Test("a driver that names another protocol than its manifest fails the handshake, and the kit exits 1", .timeLimit(.minutes(2)))
    func lyingDriver() async throws {
        try await inScratch { directory in
            let manifest = try writeTestDriverManifest(in: directory, protocolID: "org.mediaroute.test", claims: "org.other.protocol")
            let run = try await KitRun.run(manifest, ["--discovery-seconds", "1"])
            #expect(run.status == .exited(1))
            #expect(run.checks("fail").contains { $0.hasPrefix("§4 Handshake") && $0.contains("-32011") }, "\(run.checks("fail"))")
        }
    }

    private static func tone(in directory: String) async throws -> MediaFileServer {
        let media = directory + "/media"
        try FileManager.default.createDirectory(atPath: media, withIntermediateDirectories: true)
        try await MediaFileServer.makeTone(at: media + "/tone.wav", seconds: 4, title: "Conformance Tone")
        return try await MediaFileServer(directory: media)
    }

    private func writeTestDriverManifest(in directory: String, protocolID: String, claims: String) throws -> String {
        let manifest: JSONValue = ["protocol": .string(protocolID),
                                   "exportedType": ["identifier": .string(protocolID), "conformsTo": ["public.media-sharing-protocol"], "description": "Test"],
                                   "executable": .string(Executables.sibling("mediaroute-testdriver")),
                                   "arguments": ["--protocol", .string(claims), "--devices", "Desk TV,Secure TV"],
                                   "environment": ["SWIFT_BACKTRACE": "enable=no"]]
        let path = directory + "/test.json"
        try Data(JSONWriter.encode(manifest)).write(to: URL(fileURLWithPath: path))
        return path
    }

    private func inScratch<T>(_ body: (String) async throws -> T) async throws -> T {
        let directory = NSTemporaryDirectory() + "/conformance-tests-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return try await withTearDown { try await body(directory) } tearDown: { try? FileManager.default.removeItem(atPath: directory) }
    }
}
