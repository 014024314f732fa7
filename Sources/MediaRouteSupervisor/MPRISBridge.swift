import DBus
import Logging
import MediaRouteWire

/// Every route with a media session on it, as an MPRIS player on the session bus: what plays on a
/// TV or speaker shows in the desktop's media controls, and their buttons reach the device. Fed
/// with the supervisor's route events, taken one after the other by a task of its own, so that
/// players appear, change and go in the order things happened.
final class MPRISBridge: Sendable {
    private let events: AsyncStream<RouteEvent>.Continuation
    private let work: Task<Void, Never>

    /// `commands` makes the commands of the player of a session (by its id).
    init(address: String, logger: Logger, commands: @escaping @Sendable (String) -> MPRISPlayer.Commands) {
        let (stream, continuation) = AsyncStream<RouteEvent>.makeStream()
        events = continuation
        work = Task {
            var players: [String: MPRISPlayer] = [:]
            var unavailable = false
            for await event in stream {
                let (session, route): (String, RouteDescription?)
                switch event {
                case .activated(let shown), .updated(let shown): (session, route) = (shown.session, shown.playback == nil ? nil : shown)
                case .deactivated(let gone, _, _): (session, route) = (gone.session, nil)
                case .playback(let id, _, let state):
                    guard let player = players[id] else { continue }
                    await player.update(state)
                    continue
                default: continue
                }
                guard let route else {
                    await players.removeValue(forKey: session)?.close()
                    continue
                }
                if let player = players[session] {
                    await player.show(route)
                    continue
                }
                do {
                    players[session] = try await MPRISPlayer.start(route, address: address, commands: commands(session))
                    unavailable = false
                } catch {
                    // Said once while the bus stays away, not for every route.
                    if !unavailable { logger.warning("MPRIS: cannot show \(route.device.displayName) on the session bus at \(address): \(error)") }
                    unavailable = true
                }
            }
            for player in players.values { await player.close() }
        }
    }

    /// Takes an event, on the supervisor's executor.
    func take(_ event: RouteEvent) { events.yield(event) }

    /// Closes every player.
    func stop() async {
        events.finish()
        await work.value
    }
}
