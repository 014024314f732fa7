import DBus
import MediaRouteWire

/// One route's media session as an MPRIS player on the session bus, so that the desktop's media
/// controls (GNOME, KDE, `playerctl`) show it and control the device. A connection of its own:
/// MPRIS players are told apart by bus name (`org.mpris.MediaPlayer2.mediaroute.<session>`), and
/// each one's object is at /org/mpris/MediaPlayer2.
actor MPRISPlayer {
    /// Where a player's buttons go: the supervisor, as if the operator asked.
    struct Commands: Sendable {
        let setPlayback: @Sendable (PlaybackChanges) async throws -> Void
        let stop: @Sendable () async throws -> Void
        let setVolume: @Sendable (Double) async throws -> Void
    }

    static let path: DBusObjectPath = "/org/mpris/MediaPlayer2"
    let busName: String
    private let connection: DBusConnection
    private var shown: MPRISState
    private var shownAt: ContinuousClock.Instant

    private init(connection: DBusConnection, busName: String, state: MPRISState) {
        self.connection = connection
        self.busName = busName
        shown = state
        shownAt = .now
    }

    /// Connects to the bus at `address`, exports the player and takes its name.
    static func start(_ route: RouteDescription, address: String, commands: Commands) async throws(DBusError) -> MPRISPlayer {
        let connection = try await DBusConnection.connect(address: address)
        let player = MPRISPlayer(connection: connection, busName: "org.mpris.MediaPlayer2.mediaroute." + MPRISState.pathElement(route.session),
                                 state: MPRISState(route: route))
        do throws(DBusError) {
            try await connection.export([player.application, player.playerInterface(commands)], at: path)
            try await connection.requestName(player.busName)
        } catch {
            await connection.close()
            throw error
        }
        return player
    }

    /// Shows `route` as it is now: PropertiesChanged for what changed, Seeked for a jump.
    func show(_ route: RouteDescription, playback: SessionPlayback? = nil) async {
        // A state older than the one shown (a route description and a state may cross) does not replace it.
        var chosen = playback ?? route.playback
        if let current = shown.playback, (chosen?.revision ?? .min) < current.revision { chosen = current }
        var newer = MPRISState(route: route, playback: chosen)
        // Another URL on the same route is another track (a SetPosition for the old one is ignored).
        newer.track = shown.track + (route.url == shown.route.url ? 0 : 1)
        let changed = shown.changes(to: newer)
        let jumped = shown.jumped(to: newer, elapsed: (ContinuousClock.now - shownAt).seconds)
        shown = newer
        shownAt = .now
        if !changed.isEmpty { try? await connection.emitPropertiesChanged(path: Self.path, interface: "org.mpris.MediaPlayer2.Player", changed: changed) }
        if jumped { try? await connection.emit(path: Self.path, interface: "org.mpris.MediaPlayer2.Player", signal: "Seeked", [.int64(newer.position)]) }
    }

    /// A seek asked through MPRIS went through: clients hear where to (the device's own report
    /// follows within a second).
    private func sought(to seconds: Double) async {
        try? await connection.emit(path: Self.path, interface: "org.mpris.MediaPlayer2.Player", signal: "Seeked", [.int64(MPRISState.microseconds(seconds))])
    }

    /// Shows a new playback state of the same route.
    func update(_ playback: SessionPlayback) async {
        await show(shown.route, playback: playback)
    }

    /// Releases the name (before closing, so that a player for the same session made right after
    /// can take it), and the player leaves the desktop's controls.
    func close() async {
        try? await connection.releaseName(busName)
        await connection.close()
    }

    private var state: MPRISState { shown }

    // MARK: The two MPRIS interfaces

    private nonisolated var application: DBusInterface {
        DBusInterface("org.mpris.MediaPlayer2", methods: [
            DBusMethod("Raise") { _ in [] },
            DBusMethod("Quit") { _ in [] },
        ], properties: [
            DBusProperty("CanQuit", "b") { .boolean(false) },
            DBusProperty("CanRaise", "b") { .boolean(false) },
            DBusProperty("HasTrackList", "b") { .boolean(false) },
            DBusProperty("Identity", "s") { [weak self] in .string(await self?.state.route.device.displayName ?? "MediaRoute") },
            DBusProperty("SupportedUriSchemes", "as") { .array("s", []) },
            DBusProperty("SupportedMimeTypes", "as") { .array("s", []) },
        ])
    }

    private nonisolated func playerInterface(_ commands: Commands) -> DBusInterface {
        let state = { @Sendable [weak self] () async -> MPRISState? in await self?.state }
        /// What a command's failure says to the caller: the supervisor's sentence.
        @Sendable func perform(_ body: () async throws -> Void) async throws(DBusError) {
            do { try await body() } catch { throw DBusError(name: DBusError.failed, message: "\(error)") }
        }
        func run(_ body: @escaping @Sendable () async throws -> Void) -> @Sendable (DBusMethodCall) async throws(DBusError) -> [DBusValue] {
            { _ throws(DBusError) in
                try await perform(body)
                return []
            }
        }
        let unsupported = { (what: String) in
            { @Sendable (_: DBusMethodCall) throws(DBusError) -> [DBusValue] in
                throw DBusError(name: "org.mpris.MediaPlayer2.Error.NotSupported", message: "\(what): a route plays one item, with no next or previous")
            }
        }
        return DBusInterface("org.mpris.MediaPlayer2.Player", methods: [
            DBusMethod("Play", handler: run { try await commands.setPlayback(PlaybackChanges(isPlaying: true)) }),
            DBusMethod("Pause", handler: run { try await commands.setPlayback(PlaybackChanges(isPlaying: false)) }),
            DBusMethod("PlayPause", handler: run { try await commands.setPlayback(PlaybackChanges(isPlaying: !(await state()?.status.isPlaying ?? false))) }),
            DBusMethod("Stop", handler: run { try await commands.stop() }),
            DBusMethod("Next", handler: unsupported("Next")),
            DBusMethod("Previous", handler: unsupported("Previous")),
            DBusMethod("Seek", inputs: [DBusArgument("Offset", "x")]) { [weak self] call throws(DBusError) in
                guard let offset = call.arguments.first?.int64 else { throw .invalidArguments("Seek takes an offset in microseconds") }
                // Without a known length nothing can be sought: MPRIS has that do nothing.
                guard let now = await state(), now.canSeek else { return [] }
                let target = max(0, now.status.position + Double(offset) / 1_000_000)
                try await perform { try await commands.setPlayback(PlaybackChanges(position: target)) }
                await self?.sought(to: target)
                return []
            },
            DBusMethod("SetPosition", inputs: [DBusArgument("TrackId", "o"), DBusArgument("Position", "x")]) { [weak self] call throws(DBusError) in
                guard let track = call.arguments.first?.objectPath, let position = call.arguments.last?.int64, position >= 0 else {
                    throw .invalidArguments("SetPosition takes a track id and a position in microseconds, not negative")
                }
                // A position meant for another track, past the end, or on media without a known
                // length is ignored, as MPRIS asks.
                let target = Double(position) / 1_000_000
                guard let now = await state(), track == now.trackID, now.canSeek, target <= (now.status.timeRange?.upperBound ?? 0) else { return [] }
                try await perform { try await commands.setPlayback(PlaybackChanges(position: target)) }
                await self?.sought(to: target)
                return []
            },
            DBusMethod("OpenUri", inputs: [DBusArgument("Uri", "s")], handler: unsupported("OpenUri")),
        ], properties: [
            DBusProperty("PlaybackStatus", "s") { .string(await state()?.playbackStatus ?? "Stopped") },
            DBusProperty("Rate", "d", get: { .double(await state()?.rate ?? 1) }, set: { value throws(DBusError) in
                guard let rate = value.double, rate.isFinite, rate >= 0 else { throw .invalidArguments("Rate is a number from 0 (pause) up") }
                // 0 pauses, as MPRIS has it; the rest within the rates advertised.
                let changes = rate == 0 ? PlaybackChanges(isPlaying: false) : PlaybackChanges(speed: Float(min(max(rate, MPRISState.rates.lowerBound), MPRISState.rates.upperBound)))
                try await perform { try await commands.setPlayback(changes) }
            }),
            DBusProperty("Metadata", "a{sv}") { await state()?.metadata ?? .properties([:]) },
            DBusProperty("Volume", "d", get: { .double(await state()?.volume ?? 1) }, set: { value throws(DBusError) in
                guard let volume = value.double else { throw .invalidArguments("Volume is a number") }
                try await perform { try await commands.setVolume(min(max(volume, 0), 1)) }
            }),
            DBusProperty("Position", "x") { .int64(await state()?.position ?? 0) },
            DBusProperty("MinimumRate", "d") { .double(MPRISState.rates.lowerBound) },
            DBusProperty("MaximumRate", "d") { .double(MPRISState.rates.upperBound) },
            DBusProperty("CanGoNext", "b") { .boolean(false) },
            DBusProperty("CanGoPrevious", "b") { .boolean(false) },
            DBusProperty("CanPlay", "b") { .boolean(true) },
            DBusProperty("CanPause", "b") { .boolean(true) },
            DBusProperty("CanSeek", "b") { .boolean(await state()?.canSeek ?? false) },
            DBusProperty("CanControl", "b") { .boolean(true) },
        ], signals: [DBusSignalDescription("Seeked", arguments: [DBusArgument("Position", "x")])])
    }
}
