import DBus
import Logging
import MediaRouteIPC
import MediaRouteWire

/// Every media session as an MPRIS player on the session bus: each route with a media session on
/// it, and each remote media session (NowPlaying), so that what plays on a TV or speaker shows in
/// the desktop's media controls and their buttons reach it. Fed from the supervisor's executor
/// (route events, remote sessions shown and removed, the system-primary one), and everything is
/// taken one after the other by a task of its own, so that players appear, change and go in the
/// order things happened. That task, the players and their connections run on one event loop (the
/// supervisor's): a session's new state becomes its PropertiesChanged without changing threads.
final class MPRISBridge: Sendable {
    /// What the bridge's task takes, in order.
    enum Input: Sendable {
        case route(RouteEvent)
        case showRemote(key: String, item: MPRISItem, commands: MPRISPlayer.Commands)
        case removeRemote(key: String)
        case primary(key: String?)
        /// A player's connection closed by itself (its player named by identity).
        case disconnected(MPRISPlayerSet.Key, ObjectIdentifier)
        /// Time to make again the players a bus that went away did not have.
        case retry
    }

    private let inputs: AsyncStream<Input>.Continuation
    private let work: Task<Void, Never>

    /// `commands` makes the commands of the player of a route's session (by its id).
    init(address: String, logger: Logger, loop: EventLoop = .shared, commands: @escaping @Sendable (String) -> MPRISPlayer.Commands) {
        let (stream, continuation) = AsyncStream<Input>.makeStream()
        inputs = continuation
        work = Task(executorPreference: loop) {
            let players = MPRISPlayerSet(address: address, logger: logger, loop: loop) { continuation.yield($0) }
            var routes: [String: MPRISState] = [:]
            for await input in stream {
                switch input {
                case .route(let event):
                    await Self.take(event, routes: &routes, players: players, commands: commands)
                case .showRemote(let key, let item, let commands):
                    await players.show(.remote(key: key), item, commands: commands, trackBase: Self.trackBase(remote: key))
                case .removeRemote(let key):
                    await players.remove(.remote(key: key))
                case .primary(let key):
                    await players.setPrimary(key)
                case .disconnected(let key, let player):
                    await players.disconnected(key, player: player)
                case .retry:
                    await players.retryNow()
                }
            }
            await players.closeAll()
        }
    }

    /// Takes a route event, on the supervisor's executor.
    func take(_ event: RouteEvent) { inputs.yield(.route(event)) }

    /// Shows a remote media session (by its key) as `item`, its buttons reaching `commands`: a new
    /// player `org.mpris.MediaPlayer2.mediaroute.remote_<key>` (or the stable name when it is the
    /// system-primary one) the first time, the same player changing after. On the supervisor's executor.
    func show(remote key: String, _ item: MPRISItem, commands: MPRISPlayer.Commands) {
        inputs.yield(.showRemote(key: key, item: item, commands: commands))
    }

    /// The remote media session's player leaves the bus.
    func remove(remote key: String) { inputs.yield(.removeRemote(key: key)) }

    /// Makes the remote session `key` the system-primary one (nil: none), whose player is under
    /// the stable name `org.mpris.MediaPlayer2.mediaroute`; the former one goes back to its own
    /// name. Remembered for a session not shown yet, and after one is removed.
    func setPrimary(_ key: String?) { inputs.yield(.primary(key: key)) }

    /// Closes every player.
    func stop() async {
        inputs.finish()
        await work.value
    }

    static func trackBase(remote key: String) -> DBusObjectPath { DBusObjectPath("/org/mediaroute/remote/\(MPRISState.pathElement(key))") }

    /// A route with a media session on it shows as a player; one without (or gone) does not.
    private static func take(_ event: RouteEvent, routes: inout [String: MPRISState], players: MPRISPlayerSet,
                             commands: @Sendable (String) -> MPRISPlayer.Commands) async {
        let state: MPRISState
        switch event {
        case .activated(let shown), .updated(let shown):
            guard shown.playback != nil else { return await removeRoute(shown.session, routes: &routes, players: players) }
            state = routes[shown.session].map { $0.taking(shown) } ?? MPRISState(route: shown)
        case .deactivated(let gone, _, _):
            return await removeRoute(gone.session, routes: &routes, players: players)
        case .playback(let session, _, let playback):
            guard let shown = routes[session] else { return }
            state = shown.taking(shown.route, playback: playback)
        default:
            return
        }
        let session = state.route.session
        routes[session] = state
        let key = MPRISPlayerSet.Key.route(session: session)
        await players.show(key, state.item, commands: players.commands(of: key) ?? commands(session), trackBase: state.trackBase)
    }

    private static func removeRoute(_ session: String, routes: inout [String: MPRISState], players: MPRISPlayerSet) async {
        routes[session] = nil
        await players.remove(.route(session: session))
    }
}
