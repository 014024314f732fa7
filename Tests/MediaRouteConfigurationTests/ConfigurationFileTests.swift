import Foundation
import Logging
import MediaRouteConfiguration
import MediaRouteSupervisor
import Testing

/// The configuration file read strictly: every key, and each kind of mistake refused with its line,
/// column and a sentence naming the key.
@Suite("mediarouted's configuration file")
struct ConfigurationFileTests {
    static let path = "/etc/mediaroute/mediarouted.yaml"

    @Test func everyKeyIsRead() throws {
        let directory = NSTemporaryDirectory()
        let file = try ConfigurationFile(text: """
            # a comment
            driversDirectories: [\(directory)]
            socket: /run/test/mediarouted.sock
            stateDirectory: /var/lib/test
            logLevel: debug
            mprisBus: off
            pushListen: 127.0.0.1:0
            connectionsPerUser: 4
            discoveryWaitMilliseconds: 250
            restart: {intensity: 2, periodSeconds: 30, initialBackoffMilliseconds: 10, maximumBackoffMilliseconds: 400}
            timeouts:
              requestMilliseconds: 1000
              heartbeatIntervalMilliseconds: 2000
              heartbeatTimeoutMilliseconds: 3000
              idleExitMilliseconds: 4000
            drivers:
              org.mediaroute.dlna:
                enabled: false
              org.mediaroute.airplay:
                restart: {intensity: 9}
                timeouts: {idleExitMilliseconds: 120000}
                environment: {SWIFT_BACKTRACE: enable=no, LEVEL: 3}
            """, path: Self.path)
        #expect(file.driversDirectories == [directory])
        #expect(file.socket == "/run/test/mediarouted.sock")
        #expect(file.stateDirectory == "/var/lib/test")
        #expect(file.logLevel == .debug)
        #expect(file.mprisBus == .off)
        #expect(file.pushListen == .value(PushListenAddress("127.0.0.1:0")!))
        #expect(file.connectionsPerUser == 4)
        #expect(file.discoveryWait == .milliseconds(250))
        #expect(file.drivers.restart == RestartSettings(intensity: 2, period: .seconds(30), initialBackoff: .milliseconds(10), maximumBackoff: .milliseconds(400)))
        #expect(file.drivers.timeouts == TimeoutSettings(request: .seconds(1), heartbeatInterval: .seconds(2), heartbeatTimeout: .seconds(3), idleExit: .seconds(4)))
        #expect(file.drivers.isDisabled("org.mediaroute.dlna"))
        #expect(!file.drivers.isDisabled("org.mediaroute.airplay"))
        let airplay = try #require(file.drivers.overrides["org.mediaroute.airplay"])
        #expect(airplay.restart == RestartSettings(intensity: 9))
        #expect(airplay.timeouts == TimeoutSettings(idleExit: .seconds(120)))
        #expect(airplay.environment == ["SWIFT_BACKTRACE": "enable=no", "LEVEL": "3"])
    }

    @Test func anEmptyFileOrOneOfCommentsIsEveryDefault() throws {
        #expect(try ConfigurationFile(text: "", path: Self.path).drivers == DriverSettings())
        let comments = try ConfigurationFile(text: "# nothing\n\n# at all\n", path: Self.path)
        #expect(comments.logLevel == nil && comments.driversDirectories == nil && comments.drivers == DriverSettings())
    }

    @Test(arguments: [
        // (file, line, column, what the sentence says)
        ("logLevel: info\nlogLevell: debug\n", 2, 1, "unknown key \"logLevell\" at the top level; the keys there are driversDirectories, socket"),
        ("restart:\n  intensity: 3\n  period: 60\n", 3, 3, "unknown key \"period\" in restart; the keys there are intensity, periodSeconds"),
        ("drivers:\n  org.x.y:\n    enable: false\n", 3, 5, "unknown key \"enable\" in drivers.\"org.x.y\"; the keys there are enabled, restart, timeouts, environment"),
        ("connectionsPerUser: many\n", 1, 21, "connectionsPerUser must be a whole number from 1 to 65536, not many"),
        ("connectionsPerUser: \"4\"\n", 1, 21, "connectionsPerUser must be a whole number from 1 to 65536, not \"4\" (quoted)"),
        ("timeouts:\n  idleExitMilliseconds: 0\n", 2, 25, "timeouts.idleExitMilliseconds must be a whole number from 1 to 3600000 (milliseconds), not 0"),
        ("restart: {intensity: 5000}\n", 1, 22, "restart.intensity must be a whole number from 1 to 1000 (restarts within the period), not 5000"),
        ("logLevel: loud\n", 1, 11, "logLevel must be one of trace, debug, info, notice, warning, error, critical, not \"loud\""),
        ("socket: run/x.sock\n", 1, 9, "socket must be an absolute path (starting with /), not \"run/x.sock\""),
        ("socket: [/a, /b]\n", 1, 9, "socket must be an absolute path, not a list"),
        ("stateDirectory:\n", 1, 16, "stateDirectory has no value; give an absolute path, or leave the key out for the default"),
        ("driversDirectories: /usr/lib\n", 1, 21, "driversDirectories must be a list of absolute paths of directories"),
        ("driversDirectories:\n  - /nonexistent/mediaroute-drivers\n", 2, 5, "driversDirectories names /nonexistent/mediaroute-drivers, which is not a directory"),
        ("mprisBus: false\n", 1, 11, "mprisBus must be a D-Bus address such as unix:path=/run/user/1000/bus, or off; not \"false\""),
        ("pushListen: localhost:2197\n", 1, 13, "pushListen must be a numeric IPv4 address and a port, such as 127.0.0.1:2197, or off; not \"localhost:2197\""),
        ("drivers:\n  dlna:\n    enabled: false\n", 2, 3, "drivers.\"dlna\": \"dlna\" is not a protocol id"),
        ("drivers:\n  org.x.y: {enabled: no}\n", 2, 22, "drivers.\"org.x.y\".enabled must be true or false, not no"),
        ("drivers:\n  org.x.y:\n    environment: {A=B: c}\n", 3, 19, "drivers.\"org.x.y\".environment.A=B: a variable name cannot contain \"=\""),
        ("drivers:\n  org.x.y:\n    environment: {MEDIAROUTE_STATE_DIRECTORY: /tmp}\n", 3, 19,
         "drivers.\"org.x.y\".environment.MEDIAROUTE_STATE_DIRECTORY: MEDIAROUTE_ variables are set by mediarouted for its drivers and cannot be overridden"),
        ("driversDirectories: []\n", 1, 21, "driversDirectories must name at least one directory of driver manifests"),
        ("reconnectWindowSeconds: 90000\n", 1, 25, "reconnectWindowSeconds must be a whole number from 0 to 86400 (seconds), not 90000"),
        ("- logLevel: info\n", 1, 1, "the configuration must be a mapping of keys to values"),
        ("logLevel: info\nrestart: {intensity: 3\nsocket: /x\n", 3, 7, "is not valid YAML: did not find expected ',' or '}'"),
        ("logLevel: info\nlogLevel: debug\n", 1, 1, "the key \"logLevel\" is given more than once in the same mapping; keep one"),
        ("restart:\n  intensity: 3\n   periodSeconds: 6\n", 3, 17, "is not valid YAML: mapping values are not allowed in this context"),
    ])
    func aMistakeIsRefusedWithItsLineAndASentence(_ text: String, _ line: Int, _ column: Int, _ sentence: String) {
        #expect {
            try ConfigurationFile(text: text, path: Self.path)
        } throws: { error in
            guard let problem = error as? ConfigurationProblem else { return false }
            #expect(problem.line == line, "\(problem)")
            #expect(problem.column == column, "\(problem)")
            #expect(problem.reason.contains(sentence), "\(problem)")
            #expect(problem.description.hasPrefix("\(Self.path):\(line):\(column): "), "\(problem)")
            return true
        }
    }

    @Test func aMissingFileIsFineOnlyWhereItIsTheDefault() throws {
        let missing = NSTemporaryDirectory() + "mediaroute-no-such-config-\(UUID().uuidString.prefix(8)).yaml"
        let named = ConfigurationFileLocation(option: missing, environment: [:], isRoot: false, home: "/home/someone")
        #expect(throws: ConfigurationProblem(path: missing, reason: "does not exist (named by --config); create it, or name another file")) { try named.read() }
        let byVariable = ConfigurationFileLocation(option: nil, environment: ["MEDIAROUTE_CONFIG": missing], isRoot: false, home: "/home/someone")
        #expect(throws: ConfigurationProblem(path: missing, reason: "does not exist (named by $MEDIAROUTE_CONFIG); create it, or name another file")) { try byVariable.read() }
        let byDefault = ConfigurationFileLocation(option: nil, environment: ["XDG_CONFIG_HOME": NSTemporaryDirectory() + "mediaroute-none"], isRoot: false, home: "/home/someone")
        #expect(try byDefault.read() == ConfigurationFile())
    }

    @Test func theDefaultPlaceIsEtcForRootAndTheXDGConfigHomeForAUser() {
        #expect(ConfigurationFileLocation(option: nil, environment: [:], isRoot: true, home: "/root").path == "/etc/mediaroute/mediarouted.yaml")
        #expect(ConfigurationFileLocation(option: nil, environment: ["XDG_CONFIG_HOME": "/home/a/cfg"], isRoot: false, home: "/home/a").path
                == "/home/a/cfg/mediaroute/mediarouted.yaml")
        #expect(ConfigurationFileLocation(option: nil, environment: [:], isRoot: false, home: "/home/a").path == "/home/a/.config/mediaroute/mediarouted.yaml")
        #expect(ConfigurationFileLocation(option: "/x.yaml", environment: ["MEDIAROUTE_CONFIG": "/y.yaml"], isRoot: true, home: "/root").path == "/x.yaml")
    }

    /// The shipped file documents every key at its default: with its settings uncommented it reads
    /// as the built-in defaults, and it names every key the reader knows.
    @Test func theShippedFileIsEveryKeyAtItsDefault() throws {
        let shipped = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Sources/mediarouted/mediarouted.yaml").path
        let text = try String(contentsOfFile: shipped, encoding: .utf8)
        // Settings are commented as "#key: value", their blocks' lines as "#  key: value"; prose as "# text".
        var inSetting = false
        let settings = text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> Substring in
            if line.hasPrefix("#"), let second = line.dropFirst().first, second != " " {
                inSetting = true
                return line.dropFirst()
            }
            if inSetting && line.hasPrefix("#  ") { return line.dropFirst() }
            inSetting = false
            return line
        }.joined(separator: "\n")
        let file = try ConfigurationFile(text: settings, path: shipped)
        let defaults = RestartPolicy(), timeouts = TimeoutSettings().applied(to: try Self.anyManifestTimeouts())
        #expect(file.logLevel == .info)
        #expect(file.pushListen == .value(.standard))
        #expect(file.connectionsPerUser == ControlServer.defaultConnectionsPerUser)
        #expect(file.discoveryWait == DaemonSettings.defaultDiscoveryWait)
        #expect(file.drivers.restart.applied(to: RestartPolicy()) == defaults)
        #expect(file.drivers.restart == RestartSettings(intensity: defaults.intensity, period: defaults.period,
                                                        initialBackoff: defaults.initialBackoff, maximumBackoff: defaults.maximumBackoff))
        #expect(file.drivers.timeouts == TimeoutSettings(request: timeouts.request, heartbeatInterval: timeouts.heartbeatInterval,
                                                         heartbeatTimeout: timeouts.heartbeatTimeout, idleExit: timeouts.idleExit))
        #expect(file.drivers.overrides.isEmpty)
        for key in ["driversDirectories", "socket", "stateDirectory", "logLevel", "mprisBus", "pushListen", "connectionsPerUser",
                    "discoveryWaitMilliseconds", "restart", "timeouts", "drivers", "enabled", "environment"] {
            #expect(text.contains("\(key):"), "the shipped file does not document \(key)")
        }
    }

    /// The built-in timeouts, as a manifest that says none has them.
    static func anyManifestTimeouts() throws -> DriverManifest.Timeouts {
        let directory = NSTemporaryDirectory() + "mediaroute-manifest-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/org.test.plain.json"
        try Data(#"{"protocol": "org.test.plain", "exportedType": {"identifier": "org.test.plain", "conformsTo": ["public.media-sharing-protocol"], "description": "Plain"}, "executable": "/bin/true"}"#.utf8)
            .write(to: URL(fileURLWithPath: path))
        return try DriverManifest(path: path).timeouts
    }
}
