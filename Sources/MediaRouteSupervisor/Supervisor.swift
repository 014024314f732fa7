import Foundation
import Logging
import MediaDevice
import MediaRouteIPC

/// Where the supervisor finds drivers and keeps its state.
public struct SupervisorConfiguration: Sendable {
    public var driversDirectories: [String]
    /// Holds `state.json` (operator decisions) and one private directory per driver.
    public var stateDirectory: String
    /// How long an activation of a device nobody has discovered yet waits for discovery to find it,
    /// counted from when the drivers run and discover (starting them on a busy machine takes time
    /// of its own): drivers forget their devices when they exit (idle or crashed), and the person
    /// should not need to run `devices` first.
    public var discoveryOnDemand: Duration

    /// The session bus to show media sessions on as MPRIS players (the desktop's media controls);
    /// nil shows none (a system service has no desktop).
    public var mprisBusAddress: String?

    /// Where to accept pushes (`PushEndpoint`); nil accepts none.
    public var pushListenAddress: PushListenAddress?

    /// Restart and timeout defaults for every driver, and per-driver overrides (the daemon's
    /// configuration file).
    public var drivers: DriverSettings

    /// How long a route whose device went away (or whose daemon restarted) waits for it to come
    /// back and be re-activated by itself; zero ends such routes at once and keeps none across restarts.
    public var reconnectWindow: Duration

    public init(driversDirectories: [String], stateDirectory: String, discoveryOnDemand: Duration = .seconds(5), mprisBusAddress: String? = nil,
                pushListenAddress: PushListenAddress? = nil, drivers: DriverSettings = DriverSettings(), reconnectWindow: Duration = .seconds(600)) {
        self.drivers = drivers
        self.driversDirectories = driversDirectories
        self.stateDirectory = stateDirectory
        self.discoveryOnDemand = discoveryOnDemand
        self.mprisBusAddress = mprisBusAddress
        self.pushListenAddress = pushListenAddress
        self.reconnectWindow = reconnectWindow
    }
}

/// The supervisor: runs every driver as its own process, brokers discovery for route pickers,
/// and contains drivers that crash, hang, flood or lie, so the rest keeps working.
///
/// An actor on the IPC event loop (driver messages arrive on the thread that runs it) that owns
/// one component per job, none of them Sendable, each in its own file: the driver fleet, the route
/// table, the pickers, the event bus and the operator's book. Its extensions orchestrate them:
/// driver lifecycle (`+Drivers`), what drivers report (`+DriverReports`), discovery (`+Picker`),
/// activation (`+Activation`), sessions (`+Sessions`), volume and data (`+VolumeAndData`), sample
/// streams (`+Streams`), the operator's commands (`+Operator`), remembered devices and saved routes
/// (`+Remembering`) and devices that come back (`+Reconnect`). A new capability is a new
/// component and extension, not more lines here.
public actor Supervisor {
    public nonisolated let loop: EventLoop
    public nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
    /// Its live parts change with `reconfigure` (SIGHUP).
    var configuration: SupervisorConfiguration
    let logger: Logger

    let fleet: DriverFleet
    let routes = RouteTable()
    let pickers = PickerBoard()
    let events = EventBus()
    /// Each driver's last log lines (`drivers.log`).
    nonisolated let driverLog = DriverLogBook()
    /// Apps' remote media sessions (NowPlaying), made by their extensions.
    let remote = RemoteSessionTable()
    /// Media sessions shown on the desktop (MPRIS), when a session bus was given.
    var mpris: MPRISBridge?
    let book: OperatorBook
    /// Devices' nicknames and last volumes, and the routes to bring back after a restart.
    let remembered: RememberedDevices
    let savedRoutes: SavedRoutes
    /// Each app's push credential, and the endpoint pushes arrive at (when configured).
    let pushCredentials: PushCredentials
    /// Each app's push-to-start token, kept across restarts as its server keeps it.
    let pushToStartTokens: AppSecretStore
    var pushEndpoint: PushEndpoint?
    private(set) var isShuttingDown = false

    /// More messages than this from one driver within a second is flooding.
    static let floodLimit = 5000
    /// Heartbeats in a row a driver may miss while it keeps sending (see `startHeartbeat`).
    static let heartbeatsForgivenWhileTalking = 2
    /// More devices than this from one driver is flooding too.
    static let deviceLimit = 1024
    /// How long a driver may take to report an activation or session outcome.
    static let outcomeTimeout: Duration = .seconds(60)
    /// The largest data-channel message, in bytes (base64 on the wire stays far under the frame limit).
    public static let maximumDataMessage = 1 << 20

    public init(configuration: SupervisorConfiguration, logger: Logger, loop: EventLoop = .shared) {
        self.configuration = configuration
        self.logger = logger
        self.loop = loop
        self.fleet = DriverFleet(directories: configuration.driversDirectories, settings: configuration.drivers)
        self.book = OperatorBook(stateDirectory: configuration.stateDirectory)
        self.remembered = RememberedDevices(stateDirectory: configuration.stateDirectory)
        self.savedRoutes = SavedRoutes(stateDirectory: configuration.stateDirectory)
        self.pushCredentials = PushCredentials(stateDirectory: configuration.stateDirectory)
        self.pushToStartTokens = AppSecretStore(path: (configuration.stateDirectory as NSString).appendingPathComponent("push-to-start-tokens.json"),
                                                what: "push-to-start tokens")
    }

    /// Loads the manifests and the operator state; refused manifests are logged and listed, the
    /// others are ready to start on demand.
    public func start() async throws {
        try FileManager.default.createDirectory(atPath: configuration.stateDirectory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        try book.load()
        try? FileManager.default.removeItem(atPath: artworkDirectory)
        fleet.load()
        for problem in fleet.refused { logger.error("refused driver manifest \(problem)") }
        warnAboutUnservedOverrides()
        loadRememberedState()
        if let address = configuration.mprisBusAddress, mpris == nil { showSessionsOnTheDesktop(address) }
        if let address = configuration.pushListenAddress, pushEndpoint == nil { await acceptPushes(at: address) }
        logger.info("\(fleet.records.count) driver(s) ready: \(fleet.records.map(\.manifest.protocolID).joined(separator: ", "))")
    }

    /// Stops every driver (closing its channel, then SIGTERM, then SIGKILL after 2 s).
    public func shutdown() async {
        saveRoutesForTheNextStart()
        isShuttingDown = true
        pickers.closeAll()
        await mpris?.stop()
        await pushEndpoint?.stop()
        for record in fleet.records {
            if let process = record.process { await stop(process, .supervisorShuttingDown) }
            record.cancelTimers(loop)
        }
        try? FileManager.default.removeItem(atPath: artworkDirectory)
    }

    // MARK: Clients and events

    func clientConnected(_ client: ClientID) { routes.clients.insert(client) }

    /// Calls `handler` on the supervisor's executor with every route event from now on, in order.
    func subscribe(_ handler: @escaping @Sendable (RouteEvent) -> Void) -> Int { events.subscribe(handler) }

    func unsubscribe(_ id: Int) { events.unsubscribe(id) }

    /// Calls `handler` on the supervisor's executor with each playback state published from now
    /// on, whoever owns the session: the playback events, and the main routes' updates that carry
    /// a session's state (the first as the session starts, then others, a volume change among
    /// them), as apps hear them; for a benchmark to time. `unwatchPlayback(id)` ends it.
    package func watchPlayback(_ handler: @escaping @Sendable (_ session: String, _ state: SessionPlayback) -> Void) -> Int {
        subscribe { event in
            switch event {
            case .playback(let session, _, let state): handler(session, state)
            case .updated(let route): if let state = route.playback { handler(route.session, state) }
            default: break
            }
        }
    }

    package func unwatchPlayback(_ id: Int) { unsubscribe(id) }

    func publish(_ event: RouteEvent) {
        events.publish(event)
        if event.changesSavedRoutes { routesChanged() }
    }

    /// Route deactivations and the like, newest last, for `mediaroute status`.
    var recentEvents: [String] { events.recent }

    /// Tells apps a main route changed (children are not theirs to see); the desktop's media
    /// controls hear of every route, a session an app opened beside another's included.
    func announceUpdate(_ route: ActiveRoute) {
        if route.parent == nil { publish(.updated(route: route.description)) } else { mpris?.take(.updated(route: route.description)) }
    }
}
