import Foundation
import Logging
import MediaRouteSupervisor

/// Where mediarouted's settings come from (its flags, its environment, its configuration file), read
/// at start and again on SIGHUP.
public struct ConfigurationSource: Sendable {
    public let commandLine: CommandLineSettings
    public let location: ConfigurationFileLocation
    public let environment: [String: String]
    public let isRoot: Bool
    public let home: String
    /// The drivers installed beside the daemon (`BINDIR/../lib/mediaroute/drivers`, as `make install`
    /// lays them out), used when nothing names a drivers directory.
    public let installedDriversDirectory: String?

    public init(commandLine: CommandLineSettings, configOption: String?, environment: [String: String] = ProcessInfo.processInfo.environment,
                isRoot: Bool = getuid() == 0, home: String = NSHomeDirectory(), installedDriversDirectory: String? = Self.driversBesideExecutable) {
        self.commandLine = commandLine
        self.location = ConfigurationFileLocation(option: configOption, environment: environment, isRoot: isRoot, home: home)
        self.environment = environment
        self.isRoot = isRoot
        self.home = home
        self.installedDriversDirectory = installedDriversDirectory
    }

    /// `BINDIR/../lib/mediaroute/drivers` of the running executable, when it is a directory.
    public static var driversBesideExecutable: String? {
        guard let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") else { return nil }
        let prefix = ((executable as NSString).deletingLastPathComponent as NSString).deletingLastPathComponent
        let directory = (prefix as NSString).appendingPathComponent("lib/mediaroute/drivers")
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) && isDirectory.boolValue ? directory : nil
    }

    /// The settings as they stand now, or why they cannot be used.
    public func read() throws(ConfigurationProblem) -> DaemonSettings {
        try DaemonSettings(commandLine: commandLine, file: location.read(), environment: environment, isRoot: isRoot, home: home,
                           installedDriversDirectory: installedDriversDirectory)
    }

    /// SIGHUP: reads the file again and applies what can change while running (the rest is logged
    /// as needing a restart); the driver manifests are re-read in any case. A file that is refused
    /// is logged with its line and reason, and `current` stays in force, whole. Returns what is in
    /// force afterwards.
    public func reload(over current: DaemonSettings, supervisor: Supervisor, logLevel: LogLevelSwitch, logger: Logger) async -> DaemonSettings {
        let new: DaemonSettings
        do {
            new = try read()
        } catch {
            logger.error("configuration not reloaded: \(error). mediarouted keeps the configuration it had, whole, and re-reads the driver manifests under it")
            await supervisor.reloadManifests()
            return current
        }
        let (taken, needRestart) = current.takingLive(new)
        logger.info("configuration reloaded from \(taken.configurationFile ?? "nowhere (no file at \(location.path)): every setting at its default")")
        for key in needRestart {
            logger.warning("configuration: \(key) changed, which needs a restart of mediarouted; until then it stays as mediarouted started with it")
        }
        logLevel.level = taken.logLevel
        logger.debug("settings in force: \(taken.summary)")
        await supervisor.reconfigure(taken.supervisorConfiguration)
        return taken
    }
}
