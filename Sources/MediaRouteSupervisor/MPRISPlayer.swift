import DBus
import MediaRouteIPC

/// One media session (a route's, or a remote media session) as an MPRIS player on the session
/// bus, so that the desktop's media controls (GNOME, KDE, `playerctl`) show it and control it. A
/// connection of its own: MPRIS players are told apart by bus name, and each one's object is at
/// /org/mpris/MediaPlayer2.
actor MPRISPlayer {
    static let path: DBusObjectPath = "/org/mpris/MediaPlayer2"
    static let playerInterface = "org.mpris.MediaPlayer2.Player"
    static let applicationInterface = "org.mpris.MediaPlayer2"

    private(set) var busName: MPRISBusName
    private let connection: DBusConnection
    /// The connection's: what the player shows becomes a signal, and a client's call reaches the
    /// player, with no hop between threads.
    nonisolated var unownedExecutor: UnownedSerialExecutor { connection.unownedExecutor }
    /// Where this session's track ids are: `<trackBase>/<n>` for its n-th track.
    private let trackBase: DBusObjectPath
    /// The item as given (its Can* before the commands limit them).
    private(set) var item: MPRISItem
    private(set) var commands: Commands
    /// How many times the track key changed.
    private var track = 0

    private init(connection: DBusConnection, busName: MPRISBusName, trackBase: DBusObjectPath, item: MPRISItem, commands: Commands) {
        self.connection = connection
        self.busName = busName
        self.trackBase = trackBase
        self.item = item
        self.commands = commands
    }

    /// Connects to the bus at `address` (the connection running on `loop`), exports the player and takes `busName`.
    static func start(_ item: MPRISItem, commands: Commands, busName: MPRISBusName, trackBase: DBusObjectPath,
                      address: String, on loop: EventLoop) async throws(DBusError) -> MPRISPlayer {
        let connection = try await DBusConnection.connect(address: address, on: loop)
        let player = MPRISPlayer(connection: connection, busName: busName, trackBase: trackBase, item: item, commands: commands)
        do throws(DBusError) {
            try await connection.export([player.application, player.playerInterface], at: path)
            try await connection.requestName(busName.rawValue, replacing: busName.isStable, allowingReplacement: busName.isStable)
        } catch {
            await connection.close()
            throw error
        }
        return player
    }

    /// The track id MPRIS clients name the item shown by (in `SetPosition`).
    var trackID: DBusObjectPath { trackBase.appending(String(track)) }

    /// The item as the desktop sees it: Can* limited by the commands there are.
    var shown: MPRISItem { commands.limiting(item) }

    /// The Player properties that are signalled, as shown now.
    private var signalled: [String: DBusValue] { shown.signalled(track: trackID, rates: commands.rates(for: item)) }

    /// Shows `newer` with `commands`: PropertiesChanged for exactly what changed, Seeked for a jump.
    func show(_ newer: MPRISItem, commands newerCommands: Commands) async {
        let before = signalled
        let jumped = item.jumped(to: newer)
        let renamed = newer.identity != item.identity
        if newer.trackKey != item.trackKey { track += 1 }
        item = newer
        commands = newerCommands
        let changed = signalled.filter { before[$0.key] != $0.value }
        if !changed.isEmpty { try? await connection.emitPropertiesChanged(path: Self.path, interface: Self.playerInterface, changed: changed) }
        if renamed { try? await connection.emitPropertiesChanged(path: Self.path, interface: Self.applicationInterface, changed: ["Identity": .string(newer.identity)]) }
        if jumped { await seeked() }
    }

    /// A seek asked through MPRIS went through: the position is the one asked for from now, and
    /// clients hear where to (the session's own report follows).
    func sought(to seconds: Double) async {
        item.position = seconds
        item.capturedAt = .now
        await seeked()
    }

    private func seeked() async {
        try? await connection.emit(path: Self.path, interface: Self.playerInterface, signal: "Seeked", [.int64(MPRISItem.microseconds(item.position(at: .now)))])
    }

    /// Moves the player to `name`: its current name is released first, then `name` taken (the
    /// stable one from its holder in one step), so that it is never under two names. When `name`
    /// cannot be taken, the player goes back to the name it had, and the error says why.
    func rename(to name: MPRISBusName) async throws(DBusError) {
        guard name != busName else { return }
        let former = busName
        _ = try? await connection.releaseName(former.rawValue)
        do {
            try await connection.requestName(name.rawValue, replacing: name.isStable, allowingReplacement: name.isStable)
            busName = name
        } catch {
            try? await connection.requestName(former.rawValue, replacing: former.isStable, allowingReplacement: former.isStable)
            throw error
        }
    }

    var isConnected: Bool { get async { await connection.isConnected } }

    /// Returns when the player's connection closed: by `close()`, or because the bus went away.
    nonisolated func waitUntilDisconnected() async { await connection.waitUntilClosed() }

    /// Releases the name (before closing, so that a player for the same session made right after
    /// can take it), and the player leaves the desktop's controls.
    func close() async {
        try? await connection.releaseName(busName.rawValue)
        await connection.close()
    }
}
