import ArgumentParser
import Foundation
import Logging
import MediaRouteConfiguration
import MediaRouteIPC
import MediaRouteSupervisor

/// The MediaRoute supervisor daemon.
@main
struct Mediarouted: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mediarouted",
        abstract: "Run media-sharing protocol drivers, each in its own process, and serve apps and the mediaroute CLI.")

    @Option(help: "The configuration file (YAML). Default: $MEDIAROUTE_CONFIG, else /etc/mediaroute/mediarouted.yaml (root) or $XDG_CONFIG_HOME/mediaroute/mediarouted.yaml, which may be missing. Flags win over it; SIGHUP reloads it.")
    var config: String?

    @Option(name: .customLong("drivers-dir"), help: "A directory of driver manifests (*.json); repeat for several. Default: $MEDIAROUTE_DRIVERS_DIRS (colon-separated), else the configuration file's driversDirectories.")
    var driversDirectories: [String] = []

    @Option(help: "The control socket. Default: $MEDIAROUTE_SOCKET, else $XDG_RUNTIME_DIR/mediaroute/mediarouted.sock (root: /run/mediaroute/mediarouted.sock).")
    var socket: String?

    @Option(name: .customLong("state-dir"), help: "Operator state and the drivers' private directories. Default: $XDG_STATE_HOME/mediaroute or ~/.local/state/mediaroute (root: /var/lib/mediaroute).")
    var stateDirectory: String?

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical. Default: the configuration file's logLevel, else info.")
    var logLevel: String?

    @Flag(name: .customLong("log-journal"), help: "Log to journald's native socket, with structured fields (MEDIAROUTE_DRIVER, ...), when it exists; else to stderr, with <N> priorities when stderr is the journal.")
    var logJournal = false

    @Option(name: .customLong("mpris-bus"), help: "The session bus to show media sessions on as MPRIS players (the desktop's media controls). Default: $DBUS_SESSION_BUS_ADDRESS.")
    var mprisBus: String?

    @Flag(name: .customLong("no-mpris"), help: "Show no media sessions on a session bus.")
    var noMPRIS = false

    @Option(name: .customLong("push-listen"), help: "Where to accept pushes from app servers, IPV4:PORT (0: any free port). Default: 127.0.0.1:2197 (loopback only).")
    var pushListen: String?

    @Flag(name: .customLong("no-push"), help: "Accept no pushes.")
    var noPush = false

    @Option(name: .customLong("reconnect-window"), help: "Seconds a route whose device went away (or that was active when the daemon stopped) waits for the device to come back and be activated again by itself; 0 ends such routes at once. Default: the configuration file's reconnectWindowSeconds, else 600.")
    var reconnectWindow: Int?

    @Option(name: .customLong("connections-per-user"), help: "Control-socket connections one user may hold open at once; more are refused with a sentence. Default: the configuration file's connectionsPerUser, else 128.")
    var connectionsPerUser: Int?

    func validate() throws {
        if let reconnectWindow, !(0...86_400).contains(reconnectWindow) { throw ValidationError("--reconnect-window must be from 0 to 86400 seconds, not \(reconnectWindow)") }
        if let connectionsPerUser, connectionsPerUser < 1 { throw ValidationError("--connections-per-user must be 1 or more, not \(connectionsPerUser)") }
        if let pushListen, PushListenAddress(pushListen) == nil {
            throw ValidationError("--push-listen must be a numeric IPv4 address and a port, e.g. 127.0.0.1:2197, not \"\(pushListen)\"")
        }
        if noPush && pushListen != nil { throw ValidationError("--push-listen and --no-push contradict each other; pass one") }
        if let logLevel, Logger.Level(rawValue: logLevel) == nil {
            throw ValidationError("unknown log level \"\(logLevel)\"; use trace, debug, info, notice, warning, error or critical")
        }
    }

    /// What the flags say, to be put over the configuration file.
    private var commandLine: CommandLineSettings {
        var settings = CommandLineSettings()
        settings.driversDirectories = driversDirectories
        settings.socket = socket
        settings.stateDirectory = stateDirectory
        settings.logLevel = logLevel.flatMap(Logger.Level.init(rawValue:))
        settings.mprisBus = mprisBus
        settings.noMPRIS = noMPRIS
        settings.pushListen = pushListen.flatMap(PushListenAddress.init)
        settings.noPush = noPush
        settings.connectionsPerUser = connectionsPerUser
        settings.reconnectWindow = reconnectWindow.map { .seconds($0) }
        return settings
    }

    func run() async throws {
        let source = ConfigurationSource(commandLine: commandLine, configOption: config)
        var settings: DaemonSettings
        do {
            settings = try source.read()
        } catch {
            FileHandle.standardError.write(Data("mediarouted: \(error)\n".utf8))
            throw ExitCode(ConfigurationProblem.exitCode)
        }
        let levelSwitch = LogLevelSwitch(settings.logLevel)
        let logOutput = LogOutput.choose(nativeJournal: logJournal)
        LoggingSystem.bootstrap { label in LevelSwitchedLogHandler(logOutput.handler(label: label, level: .trace), levelSwitch: levelSwitch) }
        let logger = Logger(label: "mediarouted")
        if logJournal && !logOutput.isNative { logger.notice("--log-journal: journald's socket \(JournalSocket.configuredPath) is not there; logging to stderr") }
        logger.info("configuration: \(settings.configurationFile ?? "no file at \(source.location.path); every setting at its default")")
        logger.debug("settings in force: \(settings.summary)")
        // systemd (Type=notify): the watchdog pings from the event loop from now on.
        let service = SystemdService.fromEnvironment(loop: .shared, logger: logger)
        // Installed before anything else: a SIGTERM right after start must stop the daemon cleanly,
        // never kill it with drivers left behind. SIGHUP reloads the configuration and the manifests.
        let signals: SignalPipe
        do { signals = try SignalPipe([SIGTERM, SIGINT, SIGHUP] + DebugLoopWedge.signals) } catch { throw ValidationError("cannot watch signals: \(error)") }
        let supervisor = Supervisor(configuration: settings.supervisorConfiguration, logger: logger)
        try await supervisor.start()
        let path = settings.socket
        let server: ControlServer
        do {
            server = try await ControlServer.start(path: path, supervisor: supervisor, logger: logger, connectionsPerUser: settings.connectionsPerUser)
        } catch {
            throw ValidationError("cannot listen on \(path): \(error)")
        }
        logger.info("mediarouted \(getpid()) listening on \(path)")
        await service?.ready(supervisor: supervisor)

        // SIGTERM and SIGINT stop every driver before the daemon exits.
        while let signalNumber = await signals.next(loop: supervisor.loop) {
            if signalNumber == SIGHUP {
                logger.info("signal \(signalNumber): reloading the configuration and re-reading the driver manifests")
                settings = await source.reload(over: settings, supervisor: supervisor, logLevel: levelSwitch, logger: logger)
                continue
            }
            if DebugLoopWedge.handle(signalNumber, loop: supervisor.loop, logger: logger) { continue }
            logger.info("signal \(signalNumber): stopping every driver")
            break
        }
        service?.stopping()
        server.close()
        await supervisor.shutdown()
        logger.info("mediarouted stopped")
    }
}
