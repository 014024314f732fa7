import Foundation
import Logging
import MediaRouteConfiguration
import MediaRouteSupervisor
import Testing
import TestSupport

/// Which setting wins: flags over the environment over the file over the defaults; for a driver,
/// the configuration's defaults under its manifest and its override over it.
@Suite("mediarouted's settings: what wins")
struct PrecedenceTests {
    static let home = "/home/someone"

    static func file(_ text: String) throws -> ConfigurationFile { try ConfigurationFile(text: text, path: "/etc/mediaroute/mediarouted.yaml") }

    @Test func flagsWinOverTheFileAndTheFileOverTheDefaults() throws {
        let fromFile = NSTemporaryDirectory() + "mediaroute-dirs-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: fromFile, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: fromFile) }
        let file = try Self.file("""
            driversDirectories: [\(fromFile)]
            socket: /run/file.sock
            stateDirectory: /var/lib/file
            logLevel: error
            mprisBus: off
            pushListen: off
            connectionsPerUser: 3
            """)
        let environment = ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1/bus"]

        let fileOnly = try DaemonSettings(commandLine: CommandLineSettings(), file: file, environment: environment, isRoot: false, home: Self.home)
        #expect(fileOnly.driversDirectories == [fromFile])
        #expect(fileOnly.socket == "/run/file.sock")
        #expect(fileOnly.stateDirectory == "/var/lib/file")
        #expect(fileOnly.logLevel == .error)
        #expect(fileOnly.mprisBusAddress == nil, "mprisBus: off wins over $DBUS_SESSION_BUS_ADDRESS")
        #expect(fileOnly.pushListenAddress == nil)
        #expect(fileOnly.connectionsPerUser == 3)

        var flags = CommandLineSettings()
        flags.driversDirectories = [NSTemporaryDirectory()]
        flags.socket = "/run/flag.sock"
        flags.stateDirectory = "/var/lib/flag"
        flags.logLevel = .trace
        flags.mprisBus = "unix:path=/run/flag-bus"
        flags.pushListen = PushListenAddress("127.0.0.1:9")
        flags.connectionsPerUser = 7
        let flagged = try DaemonSettings(commandLine: flags, file: file, environment: environment, isRoot: false, home: Self.home)
        #expect(flagged.driversDirectories == [NSTemporaryDirectory()])
        #expect(flagged.socket == "/run/flag.sock")
        #expect(flagged.stateDirectory == "/var/lib/flag")
        #expect(flagged.logLevel == .trace)
        #expect(flagged.mprisBusAddress == "unix:path=/run/flag-bus")
        #expect(flagged.pushListenAddress == PushListenAddress("127.0.0.1:9"))
        #expect(flagged.connectionsPerUser == 7)

        let defaults = try DaemonSettings(commandLine: flags, file: ConfigurationFile(), environment: environment, isRoot: false, home: Self.home)
        #expect(defaults.logLevel == .trace)
        var noFlags = CommandLineSettings()
        noFlags.driversDirectories = [NSTemporaryDirectory()]
        let builtIn = try DaemonSettings(commandLine: noFlags, file: ConfigurationFile(), environment: environment, isRoot: false, home: Self.home)
        #expect(builtIn.logLevel == .info)
        #expect(builtIn.stateDirectory == Self.home + "/.local/state/mediaroute")
        #expect(builtIn.mprisBusAddress == "unix:path=/run/user/1/bus")
        #expect(builtIn.pushListenAddress == .standard)
        #expect(builtIn.connectionsPerUser == ControlServer.defaultConnectionsPerUser)
        #expect(try DaemonSettings(commandLine: noFlags, file: ConfigurationFile(), environment: [:], isRoot: true, home: "/root").stateDirectory == "/var/lib/mediaroute")
    }

    @Test func mediaroutesOwnVariablesWinOverTheFile() throws {
        let file = try Self.file("socket: /run/file.sock\n")
        let settings = try DaemonSettings(commandLine: CommandLineSettings(), file: file,
                                          environment: ["MEDIAROUTE_DRIVERS_DIRS": NSTemporaryDirectory(), "MEDIAROUTE_SOCKET": "/run/env.sock"],
                                          isRoot: false, home: Self.home)
        #expect(settings.socket == "/run/env.sock")
        #expect(settings.driversDirectories == [NSTemporaryDirectory()])
    }

    @Test func withoutAnyDriversDirectoryTheSentenceSaysWhereToGiveOne() throws {
        #expect(throws: ConfigurationProblem(path: nil, reason: "no drivers directory: pass --drivers-dir DIR, set MEDIAROUTE_DRIVERS_DIRS, or list driversDirectories in /etc/mediaroute/mediarouted.yaml")) {
            try DaemonSettings(commandLine: CommandLineSettings(), file: try Self.file("logLevel: info\n"), environment: [:], isRoot: true, home: "/root")
        }
        var flags = CommandLineSettings()
        flags.driversDirectories = ["/nonexistent/drivers"]
        #expect(throws: ConfigurationProblem(path: nil, reason: "drivers directory /nonexistent/drivers does not exist")) {
            try DaemonSettings(commandLine: flags, file: ConfigurationFile(), environment: [:], isRoot: true, home: "/root")
        }
    }

    /// Built-in defaults < the configuration's defaults < the manifest < the configuration's override.
    @Test func aDriversOverrideWinsOverItsManifestWhichWinsOverTheDefaults() async throws {
        try await SupervisorHarness.run { harness in
            try harness.addDriver("org.test.layered", restart: ["intensity": 3], timeouts: ["requestMilliseconds": 5000])
            let manifest = try DriverManifest(path: harness.drivers + "/org.test.layered.json")
            let settings = try Self.file("""
                restart: {intensity: 8, periodSeconds: 20}
                timeouts: {requestMilliseconds: 700, idleExitMilliseconds: 900}
                drivers:
                  org.test.layered:
                    restart: {periodSeconds: 40}
                    timeouts: {idleExitMilliseconds: 1200}
                    environment: {SWIFT_BACKTRACE: enable=yes, EXTRA: one}
                """).drivers
            let configured = manifest.configured(by: settings)
            #expect(configured.restart.intensity == 3, "the manifest's intensity wins over the configuration's default")
            #expect(configured.restart.period == .seconds(40), "the override wins over the configuration's default")
            #expect(configured.restart.initialBackoff == RestartPolicy().initialBackoff, "nobody said: built in")
            #expect(configured.timeouts.request == .seconds(5), "the manifest's")
            #expect(configured.timeouts.idleExit == .milliseconds(1200), "the override's")
            #expect(configured.environment == ["SWIFT_BACKTRACE": "enable=yes", "EXTRA": "one"], "the override's variables over the manifest's")

            let defaultsOnly = manifest.configured(by: try Self.file("timeouts: {heartbeatTimeoutMilliseconds: 650, requestMilliseconds: 800}\n").drivers)
            #expect(defaultsOnly.timeouts.heartbeatTimeout == .milliseconds(650), "the manifest says none: the configuration's default")
            #expect(defaultsOnly.timeouts.request == .seconds(5), "the manifest's own wins over the configuration's default")
            #expect(manifest.configured(by: DriverSettings()) == manifest, "no configuration: the manifest as it is")
        }
    }

    @Test func aReloadTakesWhatCanChangeLiveAndKeepsTheRest() throws {
        var flags = CommandLineSettings()
        flags.driversDirectories = [NSTemporaryDirectory()]
        let before = try DaemonSettings(commandLine: flags, file: try Self.file("socket: /run/a.sock\nlogLevel: info\n"), environment: [:], isRoot: true, home: "/root")
        let edited = try DaemonSettings(commandLine: flags, file: try Self.file("""
            socket: /run/b.sock
            stateDirectory: /var/lib/b
            logLevel: debug
            pushListen: off
            discoveryWaitMilliseconds: 100
            drivers: {org.x.y: {enabled: false}}
            """), environment: [:], isRoot: true, home: "/root")
        let (taken, needRestart) = before.takingLive(edited)
        #expect(needRestart == ["socket", "stateDirectory", "pushListen"])
        #expect(taken.socket == "/run/a.sock" && taken.stateDirectory == before.stateDirectory && taken.pushListenAddress == before.pushListenAddress)
        #expect(taken.logLevel == .debug && taken.discoveryWait == .milliseconds(100) && taken.drivers.isDisabled("org.x.y"))
    }
}
