import Foundation
import Logging
import MediaRouteIPC
import MediaRouteSupervisor

/// Every setting mediarouted runs with, each taken from the first that gives it: the command
/// line, then mediarouted's own environment variables (`$MEDIAROUTE_DRIVERS_DIRS`,
/// `$MEDIAROUTE_SOCKET`), then the configuration file, then the built-in default (which may come
/// from the environment too: `$XDG_STATE_HOME`, `$DBUS_SESSION_BUS_ADDRESS`).
public struct DaemonSettings: Sendable, Hashable {
    /// The configuration file read, if any.
    public var configurationFile: String?
    public var driversDirectories: [String]
    public var socket: String
    public var stateDirectory: String
    public var logLevel: Logger.Level
    public var mprisBusAddress: String?
    public var pushListenAddress: PushListenAddress?
    public var connectionsPerUser: Int
    public var discoveryWait: Duration
    public var reconnectWindow: Duration
    public var drivers: DriverSettings

    public static let defaultDiscoveryWait: Duration = .seconds(5)
    public static let defaultReconnectWindow: Duration = .seconds(600)

    public init(commandLine: CommandLineSettings, file: ConfigurationFile, environment: [String: String], isRoot: Bool, home: String,
                installedDriversDirectory: String? = nil) throws(ConfigurationProblem) {
        func nonEmpty(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        configurationFile = file.path
        if !commandLine.driversDirectories.isEmpty {
            driversDirectories = commandLine.driversDirectories
        } else if let variable = nonEmpty("MEDIAROUTE_DRIVERS_DIRS") {
            driversDirectories = variable.split(separator: ":").map(String.init)
        } else if let listed = file.driversDirectories {
            driversDirectories = listed
        } else if let installedDriversDirectory {
            driversDirectories = [installedDriversDirectory]
        } else {
            let file = file.path.map { ", or list driversDirectories in \($0)" } ?? ", or list driversDirectories in a configuration file"
            throw ConfigurationProblem(path: nil, reason: "no drivers directory: pass --drivers-dir DIR, set MEDIAROUTE_DRIVERS_DIRS\(file)")
        }
        for directory in driversDirectories where !(file.driversDirectories ?? []).contains(directory) {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw ConfigurationProblem(path: nil, reason: "drivers directory \(directory) does not exist")
            }
        }
        socket = commandLine.socket ?? nonEmpty("MEDIAROUTE_SOCKET") ?? file.socket ?? SocketLocation.defaultPath
        if let state = commandLine.stateDirectory ?? file.stateDirectory {
            stateDirectory = state
        } else if isRoot {
            stateDirectory = "/var/lib/mediaroute"
        } else {
            stateDirectory = (nonEmpty("XDG_STATE_HOME") ?? home + "/.local/state") + "/mediaroute"
        }
        logLevel = commandLine.logLevel ?? file.logLevel ?? .info
        mprisBusAddress = Self.offOr(turnedOff: commandLine.noMPRIS, flag: commandLine.mprisBus, file: file.mprisBus,
                                     default: nonEmpty("DBUS_SESSION_BUS_ADDRESS"))
        pushListenAddress = Self.offOr(turnedOff: commandLine.noPush, flag: commandLine.pushListen, file: file.pushListen, default: .standard)
        connectionsPerUser = commandLine.connectionsPerUser ?? file.connectionsPerUser ?? ControlServer.defaultConnectionsPerUser
        discoveryWait = file.discoveryWait ?? Self.defaultDiscoveryWait
        reconnectWindow = commandLine.reconnectWindow ?? file.reconnectWindow ?? Self.defaultReconnectWindow
        drivers = file.drivers
    }

    /// A setting that may be off (`--no-push`, `pushListen: off`): the flag turning it off, else the
    /// flag giving it, else the file's word, else the default.
    private static func offOr<Value: Sendable & Hashable>(turnedOff: Bool, flag: Value?, file: OffOr<Value>?, default: Value?) -> Value? {
        if turnedOff { return nil }
        if let flag { return flag }
        switch file {
        case .off: return nil
        case .value(let value): return value
        case nil: return `default`
        }
    }

    /// What the supervisor takes.
    public var supervisorConfiguration: SupervisorConfiguration {
        SupervisorConfiguration(driversDirectories: driversDirectories, stateDirectory: stateDirectory, discoveryOnDemand: discoveryWait,
                                mprisBusAddress: mprisBusAddress, pushListenAddress: pushListenAddress, drivers: drivers, reconnectWindow: reconnectWindow)
    }
}

extension DaemonSettings {
    /// One line of what is in force, for the debug log.
    public var summary: String {
        let overrides = drivers.overrides.keys.sorted().map { id in drivers.isDisabled(id) ? "\(id) (disabled)" : id }
        return ["configuration file \(configurationFile ?? "none")", "drivers directories \(driversDirectories.joined(separator: ":"))",
                "socket \(socket)", "state directory \(stateDirectory)", "log level \(logLevel)", "MPRIS bus \(mprisBusAddress ?? "off")",
                "push \(pushListenAddress.map { "\($0)" } ?? "off")", "connections per user \(connectionsPerUser)",
                "discovery wait \(discoveryWait)", "reconnect window \(reconnectWindow)", "driver overrides \(overrides.isEmpty ? "none" : overrides.joined(separator: ", "))"]
            .joined(separator: "; ")
    }
}
