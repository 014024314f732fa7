import ArgumentParser
import Foundation
import Logging
import MediaRouteIPC
import MediaRouteSupervisor

/// The MediaRoute supervisor daemon.
@main
struct Mediarouted: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mediarouted",
        abstract: "Run media-sharing protocol drivers, each in its own process, and serve apps and the mediaroute CLI.")

    @Option(name: .customLong("drivers-dir"), help: "A directory of driver manifests (*.json); repeat for several. Default: $MEDIAROUTE_DRIVERS_DIRS (colon-separated).")
    var driversDirectories: [String] = []

    @Option(help: "The control socket. Default: $MEDIAROUTE_SOCKET, else $XDG_RUNTIME_DIR/mediaroute/mediarouted.sock (root: /run/mediaroute/mediarouted.sock).")
    var socket: String?

    @Option(name: .customLong("state-dir"), help: "Operator state and the drivers' private directories. Default: $XDG_STATE_HOME/mediaroute or ~/.local/state/mediaroute (root: /var/lib/mediaroute).")
    var stateDirectory: String?

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "info"

    @Option(name: .customLong("mpris-bus"), help: "The session bus to show media sessions on as MPRIS players (the desktop's media controls). Default: $DBUS_SESSION_BUS_ADDRESS.")
    var mprisBus: String?

    @Flag(name: .customLong("no-mpris"), help: "Show no media sessions on a session bus.")
    var noMPRIS = false

    @Option(name: .customLong("push-listen"), help: "Where to accept pushes from app servers, IPV4:PORT (0: any free port). Default: 127.0.0.1:2197 (loopback only).")
    var pushListen: String?

    @Flag(name: .customLong("no-push"), help: "Accept no pushes.")
    var noPush = false

    @Option(name: .customLong("reconnect-window"), help: "Seconds a route whose device went away (or that was active when the daemon stopped) waits for the device to come back and be activated again by itself; 0 ends such routes at once.")
    var reconnectWindow: Int = 600

    @Option(name: .customLong("connections-per-user"), help: "Control-socket connections one user may hold open at once; more are refused with a sentence.")
    var connectionsPerUser: Int = ControlServer.defaultConnectionsPerUser

    func validate() throws {
        guard (0...86_400).contains(reconnectWindow) else { throw ValidationError("--reconnect-window must be from 0 to 86400 seconds, not \(reconnectWindow)") }
        guard connectionsPerUser >= 1 else { throw ValidationError("--connections-per-user must be 1 or more, not \(connectionsPerUser)") }
        if let pushListen, PushListenAddress(pushListen) == nil {
            throw ValidationError("--push-listen must be a numeric IPv4 address and a port, e.g. 127.0.0.1:2197, not \"\(pushListen)\"")
        }
        if noPush && pushListen != nil { throw ValidationError("--push-listen and --no-push contradict each other; pass one") }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown log level \"\(logLevel)\"; use trace, debug, info, notice, warning, error or critical") }
        if directories.isEmpty { throw ValidationError("no drivers directory: pass --drivers-dir DIR or set MEDIAROUTE_DRIVERS_DIRS") }
        for directory in directories {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw ValidationError("drivers directory \(directory) does not exist")
            }
        }
    }

    private var directories: [String] {
        driversDirectories.isEmpty ? (ProcessInfo.processInfo.environment["MEDIAROUTE_DRIVERS_DIRS"]?.split(separator: ":").map(String.init) ?? []) : driversDirectories
    }

    private var resolvedStateDirectory: String {
        if let stateDirectory { return stateDirectory }
        let environment = ProcessInfo.processInfo.environment
        if getuid() == 0 { return "/var/lib/mediaroute" }
        if let state = environment["XDG_STATE_HOME"], !state.isEmpty { return state + "/mediaroute" }
        return NSHomeDirectory() + "/.local/state/mediaroute"
    }

    func run() async throws {
        let level = Logger.Level(rawValue: logLevel)!
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "mediarouted")
        // Installed before anything else: a SIGTERM right after start must stop the daemon cleanly,
        // never kill it with drivers left behind. SIGHUP re-reads the driver manifests.
        let signals: SignalPipe
        do { signals = try SignalPipe([SIGTERM, SIGINT, SIGHUP]) } catch { throw ValidationError("cannot watch signals: \(error)") }
        let mpris = noMPRIS ? nil : (mprisBus ?? ProcessInfo.processInfo.environment["DBUS_SESSION_BUS_ADDRESS"]).flatMap { $0.isEmpty ? nil : $0 }
        let push = noPush ? nil : pushListen.flatMap(PushListenAddress.init) ?? .standard
        let supervisor = Supervisor(configuration: SupervisorConfiguration(driversDirectories: directories, stateDirectory: resolvedStateDirectory,
                                                                           mprisBusAddress: mpris, pushListenAddress: push,
                                                                           reconnectWindow: .seconds(reconnectWindow)),
                                    logger: logger)
        try await supervisor.start()
        let path = socket ?? SocketLocation.defaultPath
        let server: ControlServer
        do {
            server = try await ControlServer.start(path: path, supervisor: supervisor, logger: logger, connectionsPerUser: connectionsPerUser)
        } catch {
            throw ValidationError("cannot listen on \(path): \(error)")
        }
        logger.info("mediarouted \(getpid()) listening on \(path)")

        // SIGTERM and SIGINT stop every driver before the daemon exits.
        while let signalNumber = await signals.next(loop: supervisor.loop) {
            if signalNumber == SIGHUP {
                logger.info("signal \(signalNumber): re-reading the driver manifests")
                await supervisor.reloadManifests()
                continue
            }
            logger.info("signal \(signalNumber): stopping every driver")
            break
        }
        server.close()
        await supervisor.shutdown()
        logger.info("mediarouted stopped")
    }
}
