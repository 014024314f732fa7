import Foundation
import Logging
import MediaDevice
import MediaRouteSupervisor
import Yams

/// What mediarouted's configuration file says: YAML, every key optional (left out, it takes its
/// default), read strictly: an unknown key, a wrong type or a value out of range is a
/// `ConfigurationProblem` with its line and column. The keys and their defaults are documented in
/// `Sources/mediarouted/mediarouted.yaml`.
public struct ConfigurationFile: Sendable, Hashable {
    /// The file read; nil when there was none (everything at its default).
    public var path: String?
    public var driversDirectories: [String]?
    public var socket: String?
    public var stateDirectory: String?
    public var logLevel: Logger.Level?
    /// A D-Bus address, or off; nil: `$DBUS_SESSION_BUS_ADDRESS`.
    public var mprisBus: OffOr<String>?
    public var pushListen: OffOr<PushListenAddress>?
    public var connectionsPerUser: Int?
    public var discoveryWait: Duration?
    public var reconnectWindow: Duration?
    public var drivers = DriverSettings()

    static let keys = ["driversDirectories", "socket", "stateDirectory", "logLevel", "mprisBus", "pushListen", "connectionsPerUser",
                       "discoveryWaitMilliseconds", "reconnectWindowSeconds", "restart", "timeouts", "drivers"]
    static let driverKeys = ["enabled", "restart", "timeouts", "environment"]
    static let restartKeys = ["intensity", "periodSeconds", "initialBackoffMilliseconds", "maximumBackoffMilliseconds"]
    static let timeoutKeys = ["requestMilliseconds", "heartbeatIntervalMilliseconds", "heartbeatTimeoutMilliseconds", "idleExitMilliseconds"]
    static let logLevels = Logger.Level.allCases.map(\.rawValue)

    /// No file: every setting at its default.
    public init() {}

    /// Reads and checks the file at `path`.
    public init(path: String) throws(ConfigurationProblem) {
        guard FileManager.default.fileExists(atPath: path) else { throw ConfigurationProblem(path: path, reason: "does not exist") }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationProblem(path: path, reason: "cannot be read; is it a file mediarouted's user may read?")
        }
        guard let text = String(data: data, encoding: .utf8) else { throw ConfigurationProblem(path: path, reason: "is not UTF-8 text") }
        try self.init(text: text, path: path)
    }

    /// Checks `text`, read from `path`.
    public init(text: String, path: String) throws(ConfigurationProblem) {
        self.path = path
        let document: Node?
        do { document = try Yams.compose(yaml: text) } catch { throw Self.problem(error, path) }
        guard let document else { return }     // empty, or only comments
        let top = ConfigurationNode(node: document, key: "", path: path)
        guard document.mapping != nil else {
            throw top.problem("the configuration must be a mapping of keys to values, such as logLevel: info")
        }
        for (name, value, _) in try top.members(allowed: Self.keys, what: "a mapping") {
            switch name {
            case "driversDirectories":
                let listed = try value.list(of: "absolute paths of directories") { item throws(ConfigurationProblem) in
                    let directory = try item.absolutePath()
                    var isDirectory: ObjCBool = false
                    guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
                        throw item.problem("\(item.key) names \(directory), which is not a directory")
                    }
                    return directory
                }
                guard !listed.isEmpty else { throw value.problem("\(value.key) must name at least one directory of driver manifests") }
                driversDirectories = listed
            case "socket": socket = try value.absolutePath()
            case "stateDirectory": stateDirectory = try value.absolutePath()
            case "logLevel":
                let level = try value.string("a log level")
                guard let known = Logger.Level(rawValue: level) else {
                    throw value.problem("logLevel must be one of \(Self.logLevels.joined(separator: ", ")), not \"\(level)\"")
                }
                logLevel = known
            case "mprisBus":
                let address = try value.string("a D-Bus address such as unix:path=/run/user/1000/bus, or off")
                guard address == "off" || address.contains(":") && address.contains("=") else {
                    throw value.problem("mprisBus must be a D-Bus address such as unix:path=/run/user/1000/bus, or off; not \"\(address)\"")
                }
                mprisBus = address == "off" ? .off : .value(address)
            case "pushListen":
                let address = try value.string("IPV4:PORT, or off")
                if address == "off" {
                    pushListen = .off
                } else if let listen = PushListenAddress(address) {
                    pushListen = .value(listen)
                } else {
                    throw value.problem("pushListen must be a numeric IPv4 address and a port, such as 127.0.0.1:2197, or off; not \"\(address)\"")
                }
            case "connectionsPerUser": connectionsPerUser = try value.integer(in: 1...65_536)
            case "discoveryWaitMilliseconds": discoveryWait = .milliseconds(try value.integer(in: 0...600_000, unit: " (milliseconds)"))
            case "reconnectWindowSeconds": reconnectWindow = .seconds(try value.integer(in: 0...86_400, unit: " (seconds)"))
            case "restart": drivers.restart = try Self.restart(value)
            case "timeouts": drivers.timeouts = try Self.timeouts(value)
            default: drivers.overrides = try Self.overrides(value)
            }
        }
    }

    private static func restart(_ node: ConfigurationNode) throws(ConfigurationProblem) -> RestartSettings {
        var restart = RestartSettings()
        for (name, value, _) in try node.members(allowed: restartKeys, what: "a mapping of \(restartKeys.joined(separator: ", "))") {
            switch name {
            case "intensity": restart.intensity = try value.integer(in: 1...1000, unit: " (restarts within the period)")
            case "periodSeconds": restart.period = .seconds(try value.integer(in: 1...86_400, unit: " (seconds)"))
            case "initialBackoffMilliseconds": restart.initialBackoff = .milliseconds(try value.integer(in: 1...3_600_000, unit: " (milliseconds)"))
            default: restart.maximumBackoff = .milliseconds(try value.integer(in: 1...3_600_000, unit: " (milliseconds)"))
            }
        }
        return restart
    }

    private static func timeouts(_ node: ConfigurationNode) throws(ConfigurationProblem) -> TimeoutSettings {
        var timeouts = TimeoutSettings()
        for (name, value, _) in try node.members(allowed: timeoutKeys, what: "a mapping of \(timeoutKeys.joined(separator: ", "))") {
            let duration = Duration.milliseconds(try value.integer(in: 1...3_600_000, unit: " (milliseconds)"))
            switch name {
            case "requestMilliseconds": timeouts.request = duration
            case "heartbeatIntervalMilliseconds": timeouts.heartbeatInterval = duration
            case "heartbeatTimeoutMilliseconds": timeouts.heartbeatTimeout = duration
            default: timeouts.idleExit = duration
            }
        }
        return timeouts
    }

    /// `drivers:`, by protocol id.
    private static func overrides(_ node: ConfigurationNode) throws(ConfigurationProblem) -> [String: DriverOverride] {
        var overrides: [String: DriverOverride] = [:]
        for (protocolID, entry, at) in try node.members(allowed: nil, what: "a mapping of protocol ids (such as org.mediaroute.dlna) to their settings") {
            let quoted = "drivers.\"\(protocolID)\""
            guard UTType(exportedAs: protocolID).isWellFormed else {
                throw at.problem("\(quoted): \"\(protocolID)\" is not a protocol id; drivers are named by their reverse-DNS protocol, such as org.mediaroute.dlna")
            }
            let entry = ConfigurationNode(node: entry.node, key: quoted, path: entry.path)
            var override = DriverOverride()
            for (name, value, _) in try entry.members(allowed: driverKeys, what: "a mapping of \(driverKeys.joined(separator: ", "))") {
                switch name {
                case "enabled": override.enabled = try value.boolean()
                case "restart": override.restart = try restart(value)
                case "timeouts": override.timeouts = try timeouts(value)
                default: override.environment = try environment(value)
                }
            }
            overrides[protocolID] = override
        }
        return overrides
    }

    private static func environment(_ node: ConfigurationNode) throws(ConfigurationProblem) -> [String: String] {
        var environment: [String: String] = [:]
        for (name, value, at) in try node.members(allowed: nil, what: "a mapping of variable names to values, such as SWIFT_BACKTRACE: enable=no") {
            guard !name.contains("="), !name.contains("\0") else {
                throw at.problem("\(value.key): a variable name cannot contain \"=\"")
            }
            // The supervisor's own variables say who a driver is and where it keeps its state.
            guard !name.hasPrefix("MEDIAROUTE_") else {
                throw at.problem("\(value.key): MEDIAROUTE_ variables are set by mediarouted for its drivers and cannot be overridden")
            }
            environment[name] = try value.string("the variable's value (a string)")
        }
        return environment
    }

    /// libyaml's own words for a file that is not YAML, at its line and column.
    private static func problem(_ error: any Error, _ path: String) -> ConfigurationProblem {
        guard let error = error as? YamlError else { return ConfigurationProblem(path: path, reason: "is not valid YAML: \(error)") }
        switch error {
        case .scanner(let context, let problem, let mark, _), .parser(let context, let problem, let mark, _), .composer(let context, let problem, let mark, _):
            let during = context.map { " (\($0.text) at line \($0.mark.line), column \($0.mark.column))" } ?? ""
            return ConfigurationProblem(path: path, line: mark.line, column: mark.column, reason: "is not valid YAML: \(problem)\(during)")
        case .duplicatedKeysInMapping(let duplicates, let context):
            let names = duplicates.map { "\"\($0)\"" }.joined(separator: ", ")
            return ConfigurationProblem(path: path, line: context.mark.line, column: context.mark.column,
                                        reason: "the key \(names) is given more than once in the same mapping; keep one")
        case .reader(let problem, _, _, _):
            return ConfigurationProblem(path: path, reason: "cannot be read as text: \(problem)")
        default:
            return ConfigurationProblem(path: path, reason: "is not valid YAML: \(error)")
        }
    }
}
