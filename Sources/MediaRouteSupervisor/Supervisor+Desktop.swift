import MediaRouteWire

/// The desktop's media controls: each route's media session as an MPRIS player, whose buttons
/// act as the operator's commands on that session.
extension Supervisor {
    func showSessionsOnTheDesktop(_ address: String) {
        // Weakly: the players' exported methods must not keep a stopped supervisor alive.
        let weak = WeakSupervisor(self)
        let bridge = MPRISBridge(address: address, logger: logger, loop: loop) { session in
            let set = { @Sendable (changes: PlaybackChanges) in _ = try await weak.supervisor?.setPlayback(session: session, changes, by: .operator) }
            return MPRISPlayer.Commands(
                play: { try await set(PlaybackChanges(isPlaying: true)) },
                pause: { try await set(PlaybackChanges(isPlaying: false)) },
                stop: { try await weak.supervisor?.stopSession(session: session, by: .operator) },
                seek: { seconds in try await set(PlaybackChanges(position: seconds)) },
                setVolume: { level in _ = try await weak.supervisor?.volume(session, .set(level)) },
                setRate: { rate in try await set(PlaybackChanges(speed: Float(rate))) })
        }
        mpris = bridge
        _ = subscribe { event in bridge.take(event) }
        logger.info("media sessions are shown as MPRIS players on \(address)")
    }
}

final class WeakSupervisor: Sendable {
    weak let supervisor: Supervisor?
    init(_ supervisor: Supervisor) { self.supervisor = supervisor }
}
