import Foundation
import Glibc
import MediaRouteConfiguration
import MediaRouteIPC
import Testing
import TestSupport

/// The real daemon with a configuration file: started with it, SIGHUP after editing it, SIGHUP with a
/// broken one, and started with a broken one.
@Suite("mediarouted's configuration file, for real", .timeLimit(.minutes(2)))
struct ConfigurationReloadTests {
    @Test func aSIGHUPAppliesTheEditedFile() async throws {
        try await DaemonHarness.run { harness in
            try harness.drivers.addDriver("org.test.alpha", devices: ["Alpha Lamp"])
            try harness.drivers.addDriver("org.test.beta", devices: ["Beta Lamp"])
            let config = harness.drivers.root + "/mediarouted.yaml"
            try Self.write(config, """
                logLevel: info
                drivers:
                  org.test.alpha:
                    environment: {CONFIG_MARK: first}
                """)
            try await harness.start(["--config", config])
            let daemon = try #require(harness.daemon)
            #expect(harness.log.contains("configuration: \(config)"), "\(harness.log)")
            let devices = await harness.cli(["devices", "--until", "2", "--wait", "30"])
            #expect(devices.output.contains("Alpha Lamp") && devices.output.contains("Beta Lamp"), "\(devices.output)\(devices.error)")
            let alpha = try #require(await Self.drivers(harness)["org.test.alpha"]?.pid)
            let beta = try #require(await Self.drivers(harness)["org.test.beta"]?.pid)
            #expect(Self.environment(of: alpha).contains("CONFIG_MARK=first"))
            #expect(!harness.log.contains("settings in force"), "a debug line, not logged at info")

            // Debug logging, a new variable for alpha, beta disabled.
            try Self.write(config, """
                logLevel: debug
                drivers:
                  org.test.alpha:
                    environment: {CONFIG_MARK: second}
                  org.test.beta:
                    enabled: false
                """)
            kill(daemon.pid, SIGHUP)
            try await waitUntil("the daemon logs at debug level") { harness.log.contains("settings in force") }
            try await waitUntil("beta stopped") { kill(beta, 0) != 0 }
            #expect(await Self.drivers(harness)["org.test.beta"]?.state == "disabled in the configuration file")
            #expect(await Self.drivers(harness)["org.test.alpha"]?.pid == alpha, "alpha kept running; its new environment is for its next start")
            let enable = await harness.cli(["enable", "org.test.beta"])
            #expect(enable.status != .exited(0) && enable.error.contains("disabled in mediarouted's configuration file"), "\(enable.error)")
            let restart = await harness.cli(["restart", "org.test.alpha"])
            #expect(restart.status == .exited(0), "\(restart.error)")
            let restarted = try #require(await Self.drivers(harness)["org.test.alpha"]?.pid)
            #expect(restarted != alpha)
            #expect(Self.environment(of: restarted).contains("CONFIG_MARK=second"))

            // Warning level, and beta's entry gone: it may run again.
            try Self.write(config, """
                logLevel: warning
                drivers:
                  org.test.nobody: {enabled: true}
                """)
            let reReads = harness.log.components(separatedBy: "manifests re-read").count
            kill(daemon.pid, SIGHUP)
            try await waitUntil("the daemon reloaded") { harness.log.contains("no driver manifest serves that protocol") }
            #expect(harness.log.components(separatedBy: "manifests re-read").count == reReads, "an info line, no longer logged at warning")
            let again = await harness.cli(["devices", "--until", "2", "--wait", "30"])
            #expect(again.output.contains("Beta Lamp"), "\(again.output)\(again.error)")
            let running = await Self.drivers(harness).values.compactMap(\.pid)
            await harness.stop()
            for pid in running { #expect(kill(pid, 0) != 0, "driver \(pid) outlived the daemon") }
        }
    }

    @Test func aBrokenFileOnSIGHUPIsRefusedAndTheOldOneKeptWhole() async throws {
        try await DaemonHarness.run { harness in
            try harness.drivers.addDriver("org.test.alpha", devices: ["Alpha Lamp"])
            let config = harness.drivers.root + "/mediarouted.yaml"
            try Self.write(config, "logLevel: info\n")
            try await harness.start(["--config", config])
            let daemon = try #require(harness.daemon)
            let devices = await harness.cli(["devices", "--until", "1", "--wait", "30"])
            #expect(devices.output.contains("Alpha Lamp"), "\(devices.output)\(devices.error)")
            let alpha = try #require(await Self.drivers(harness)["org.test.alpha"]?.pid)

            // Its first lines would disable alpha and quieten the log; its last is wrong.
            try Self.write(config, """
                logLevel: error
                drivers:
                  org.test.alpha:
                    enabled: false
                    restart: {intensity: lots}
                """)
            kill(daemon.pid, SIGHUP)
            try await waitUntil("the daemon refused the file") { harness.log.contains("configuration not reloaded") }
            let line = try #require(harness.log.split(separator: "\n").first { $0.contains("configuration not reloaded") })
            #expect(line.contains("\(config):5:26: drivers.\"org.test.alpha\".restart.intensity must be a whole number from 1 to 1000"), "\(line)")
            // Still at info level (the manifests re-read under the old configuration say so), alpha untouched, the daemon answering.
            try await waitUntil("the manifests re-read under the old configuration") { harness.log.contains("manifests re-read") }
            let drivers = await harness.cli(["drivers", "--json"])
            #expect(drivers.status == .exited(0), "\(drivers.error)")
            #expect(await Self.drivers(harness)["org.test.alpha"].map { [$0.state, $0.pid.map(String.init)] } == ["running", String(alpha)])
            #expect(daemon.exitIfEnded() == nil, "the daemon kept running")
        }
    }

    @Test(arguments: [
        ("broken", "logLevel: info\nlogLevl: debug\n", ":2:1: unknown key \"logLevl\" at the top level"),
        ("missing", nil, ": does not exist (named by --config); create it, or name another file"),
        ("from the environment", "connectionsPerUser: 0\n", ":1:21: connectionsPerUser must be a whole number from 1 to 65536, not 0"),
    ] as [(String, String?, String)])
    func aBrokenFileAtStartStopsTheDaemonWithEXCONFIG(_ kind: String, _ text: String?, _ sentence: String) async throws {
        try await DaemonHarness.run { harness in
            let config = harness.drivers.root + "/mediarouted.yaml"
            if let text { try Self.write(config, text) }
            let stderrPath = harness.drivers.root + "/stderr"
            let stderr = open(stderrPath, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
            let byVariable = kind == "from the environment"
            var environment = ProcessInfo.processInfo.environment
            environment["MEDIAROUTE_CONFIG"] = byVariable ? config : nil
            let daemon = try ChildProcess(executable: DaemonHarness.binary("mediarouted"),
                                          arguments: (byVariable ? [] : ["--config", config])
                                            + ["--drivers-dir", harness.drivers.drivers, "--state-dir", harness.drivers.state,
                                               "--socket", harness.socket, "--no-mpris", "--no-push"],
                                          environment: environment.map { "\($0.key)=\($0.value)" }, standardError: stderr)
            close(stderr)
            let status = await daemon.exitStatus()
            let said = (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? ""
            #expect(status == .exited(78), "\(said)")
            #expect(said.contains("mediarouted: \(config)\(sentence)"), "\(said)")
        }
    }

    // MARK: Helpers

    static func write(_ path: String, _ text: String) throws {
        try Data((text + "\n").utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    /// Each driver's state and pid, from `mediaroute drivers --json`.
    static func drivers(_ harness: DaemonHarness) async -> [String: (state: String, pid: Int32?)] {
        let list = await harness.cli(["drivers", "--json"]).json?.objectValue?["drivers"]?.arrayValue ?? []
        var drivers: [String: (state: String, pid: Int32?)] = [:]
        for case let driver? in list.map(\.objectValue) {
            guard let id = driver["protocol"]?.stringValue, let state = driver["state"]?.stringValue else { continue }
            drivers[id] = (state, driver["pid"]?.integerValue.map { Int32($0) })
        }
        return drivers
    }

    /// A process's environment, as the kernel holds it.
    static func environment(of pid: Int32) -> [String] {
        guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/environ") else { return [] }
        return data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
    }
}
