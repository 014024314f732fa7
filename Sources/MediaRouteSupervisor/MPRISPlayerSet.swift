import DBus
import Logging
import MediaRouteIPC

/// The players the MPRIS bridge keeps on one session bus: for every session shown, what it shows
/// and its player while the bus has one. Which remote session is system-primary decides which
/// player holds the stable name. When the bus goes away (a player's connection closes by itself),
/// what each session shows is kept, and the players are made again once the bus answers: tried
/// again after a quarter of a second, then twice as long each time, up to every 5 seconds.
///
/// Used by the bridge's task only, one input at a time.
final class MPRISPlayerSet {
    enum Key: Hashable, Sendable, CustomStringConvertible {
        case route(session: String)
        case remote(key: String)
        var description: String {
            switch self {
            case .route(let session): "route session \(session)"
            case .remote(let key): "remote session \(key)"
            }
        }
    }

    private struct Entry {
        var item: MPRISItem
        var commands: MPRISPlayer.Commands
        var trackBase: DBusObjectPath
        var player: MPRISPlayer?
    }

    private let address: String
    private let logger: Logger
    /// Where the players' connections (and so the players) run.
    private let loop: EventLoop
    /// Hands the bridge's task an input of its own (a player's connection closed, time to try again).
    private let wake: @Sendable (MPRISBridge.Input) -> Void
    private var entries: [Key: Entry] = [:]
    private var primary: String?
    /// The bus is away: said once until it answers again.
    private var unavailable = false
    private var retry: Task<Void, Never>?
    private var retryDelay = MPRISPlayerSet.firstRetry
    private static let firstRetry = Duration.milliseconds(250)
    private static let longestRetry = Duration.seconds(5)

    init(address: String, logger: Logger, loop: EventLoop, wake: @escaping @Sendable (MPRISBridge.Input) -> Void) {
        (self.address, self.logger, self.loop, self.wake) = (address, logger, loop, wake)
    }

    func commands(of key: Key) -> MPRISPlayer.Commands? { entries[key]?.commands }

    /// Shows `item` for `key`: on its player, or on a new one (unless the bus is away: then once it
    /// is back).
    func show(_ key: Key, _ item: MPRISItem, commands: MPRISPlayer.Commands, trackBase: DBusObjectPath) async {
        if let player = entries[key]?.player {
            entries[key]?.item = item
            entries[key]?.commands = commands
            await player.show(item, commands: commands)
            return
        }
        entries[key] = Entry(item: item, commands: commands, trackBase: trackBase)
        if retry == nil { await makePlayer(key) }
    }

    /// The session's player leaves the bus.
    func remove(_ key: Key) async {
        await entries.removeValue(forKey: key)?.player?.close()
    }

    /// Moves the stable name to `key`'s player (or to none): the new primary's player leaves its
    /// own name and takes the stable one from the former in one step, then the former takes its
    /// own name back.
    func setPrimary(_ key: String?) async {
        guard key != primary else { return }
        let former = primary
        primary = key
        if let key, let player = entries[.remote(key: key)]?.player {
            do throws(DBusError) { try await player.rename(to: .stable) } catch {
                logger.warning("MPRIS: \(Key.remote(key: key)) cannot take \(MPRISBusName.stable) as the system-primary session: \(error)")
            }
        }
        if let former, let player = entries[.remote(key: former)]?.player {
            do throws(DBusError) { try await player.rename(to: .remoteSession(former)) } catch {
                logger.warning("MPRIS: \(Key.remote(key: former)) cannot take back its own name \(MPRISBusName.remoteSession(former)): \(error)")
            }
        }
    }

    /// A player's connection closed by itself: the bus went away (or dropped it). Its session is
    /// shown again when the bus answers.
    func disconnected(_ key: Key, player: ObjectIdentifier) async {
        guard let current = entries[key]?.player, ObjectIdentifier(current) == player else { return }
        entries[key]?.player = nil
        await current.close()
        if !unavailable {
            logger.warning("MPRIS: lost the session bus at \(address): media sessions come back on the desktop when it does")
            unavailable = true
        }
        scheduleRetry()
    }

    /// Makes the players the bus does not have; tries again later if it still does not answer.
    func retryNow() async {
        retry = nil
        for (key, entry) in entries where entry.player == nil {
            await makePlayer(key)
            guard retry == nil else { return }
        }
        retryDelay = Self.firstRetry
    }

    func closeAll() async {
        retry?.cancel()
        retry = nil
        for entry in entries.values { await entry.player?.close() }
        entries = [:]
    }

    private func busName(_ key: Key) -> MPRISBusName {
        switch key {
        case .route(let session): .routeSession(session)
        case .remote(let remote): remote == primary ? .stable : .remoteSession(remote)
        }
    }

    private func makePlayer(_ key: Key) async {
        guard let entry = entries[key] else { return }
        let player: MPRISPlayer
        do throws(DBusError) {
            player = try await start(entry, as: busName(key))
        } catch {
            // Said once while the bus stays away, not for every session.
            if !unavailable { logger.warning("MPRIS: cannot show \(entry.item.identity) on the session bus at \(address): \(error)") }
            unavailable = true
            scheduleRetry()
            return
        }
        entries[key]?.player = player
        if unavailable {
            logger.info("MPRIS: the session bus at \(address) answers again: media sessions are back on the desktop")
            unavailable = false
        }
        let wake = wake
        Task {
            await player.waitUntilDisconnected()
            wake(.disconnected(key, ObjectIdentifier(player)))
        }
    }

    /// Starts a player under `name`; the stable name held by a program not ours leaves it under its own.
    private func start(_ entry: Entry, as name: MPRISBusName) async throws(DBusError) -> MPRISPlayer {
        do {
            return try await MPRISPlayer.start(entry.item, commands: entry.commands, busName: name, trackBase: entry.trackBase, address: address, on: loop)
        } catch where name.isStable && error.name == "org.freedesktop.DBus.Error.NameTaken" {
            guard let key = primary else { throw error }
            logger.warning("MPRIS: \(MPRISBusName.stable) is held by another program: the system-primary session shows as \(MPRISBusName.remoteSession(key))")
            return try await MPRISPlayer.start(entry.item, commands: entry.commands, busName: .remoteSession(key), trackBase: entry.trackBase, address: address, on: loop)
        }
    }

    private func scheduleRetry() {
        guard retry == nil else { return }
        let (delay, wake) = (retryDelay, wake)
        retryDelay = min(retryDelay * 2, Self.longestRetry)
        // A timer, not a wait for something of ours: nothing tells us when a bus comes back.
        retry = Task {
            guard (try? await Task.sleep(for: delay)) != nil else { return }
            wake(.retry)
        }
    }
}
