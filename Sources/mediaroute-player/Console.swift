import AVSystemRouting
import Foundation
import MediaDevice

/// The player's observer and data delegate: prints route events, playback state, route changes
/// and messages, and runs the commands typed on standard input.
@MainActor
final class Console: AVSystemRouteControllerObserver, AVSystemRouteDataDelegate {
    private var routes: [AVSystemRoute] = []
    private var routeWaiters: [CheckedContinuation<AVSystemRoute?, Never>] = []
    private var lastPrinted: PlaybackStatus?

    func systemRouteController(_ controller: AVSystemRouteController, handle event: AVSystemRouteEvent) async -> Bool {
        switch event.reason {
        case .activate:
            routes.append(event.route)
            let waiters = routeWaiters
            routeWaiters.removeAll()
            waiters.forEach { $0.resume(returning: event.route) }
        case .deactivate:
            routes.removeAll { $0 === event.route }
            print("route inactive: \(event.route.routeDisplayName)")
        }
        return true
    }

    /// The first active route, waiting up to `limit` for one.
    func firstRoute(within limit: Duration) async throws -> AVSystemRoute {
        if let route = routes.first { return route }
        let timeout = Task { @MainActor in
            try await Task.sleep(for: limit)
            let waiters = routeWaiters
            routeWaiters.removeAll()
            waiters.forEach { $0.resume(returning: nil) }
        }
        defer { timeout.cancel() }
        guard let route = await withCheckedContinuation({ routeWaiters.append($0) }) else {
            throw PlayerError("no route became active within \(limit)")
        }
        return route
    }

    /// Prints the session's state as it changes, route changes, and the device's messages.
    func watch(_ media: AVSystemRouteMediaSession, controller: AVSystemRouteController) {
        sessionChannel = media.dataChannel
        media.dataChannel?.dataDelegate = self
        media.route.routeDataChannel.dataDelegate = self
        let updates = media.playbackControl.updates()
        show(media.playbackControl.status)
        Task { @MainActor in
            for await status in updates { show(status) }
            if let reason = media.endReason { print("session ended: \(reason.message); last state \(describe(media.playbackControl.status))") }
        }
        let changes = controller.routeChanges()
        Task {
            for await change in changes {
                print("route change: \(change.reason.rawValue): \(change.message)")
            }
        }
    }

    func dataChannel(_ channel: AVSystemRouteDataChannel, didReceive data: Data) {
        let text = String(decoding: data, as: UTF8.self)
        print(channel === sessionChannel ? "data: \(text)" : "route data: \(text)")
    }
    private var sessionChannel: AVSystemRouteDataChannel?

    /// Runs one command; false means quit.
    func perform(_ line: String, media: AVSystemRouteMediaSession) async -> Bool {
        let words = line.split(separator: " ", maxSplits: 1).map(String.init)
        guard let verb = words.first else { return true }
        let argument = words.count > 1 ? words[1] : ""
        let control = media.playbackControl
        switch verb {
        case "quit": return false
        case "play": control.isPlaying = true
        case "pause": control.isPlaying = false
        case "seek":
            guard let seconds = Double(argument), seconds >= 0 else { print("error: seek needs seconds, e.g. `seek 30`"); return true }
            control.currentPlaybackPosition = seconds
        case "speed":
            guard let rate = Float(argument) else { print("error: speed needs a rate, e.g. `speed 2`"); return true }
            control.playbackSpeed = rate
        case "volume":
            guard let percent = Float(argument), (0...100).contains(percent) else { print("error: volume needs 0-100"); return true }
            control.volume = percent / 100
        case "mute": control.isMuted = true
        case "unmute": control.isMuted = false
        case "send", "route-send":
            let channel = verb == "send" ? media.dataChannel : media.route.routeDataChannel
            guard let channel else { print("error: a .player session has no data channel; use route-send"); return true }
            do {
                try await channel.send(Data(argument.utf8))
                print("sent: \(argument)")
            } catch {
                print("error: \(error)")
            }
            return true
        default:
            print("error: unknown command \"\(verb)\"; use play, pause, seek, speed, volume, mute, unmute, send, route-send or quit")
            return true
        }
        do {
            try await control.synchronize()
        } catch {
            print("error: \(error)")
        }
        return true
    }

    private func show(_ status: PlaybackStatus) {
        if let last = lastPrinted, last.state == status.state, last.isPlaying == status.isPlaying, last.volume == status.volume,
           last.isMuted == status.isMuted, last.speed == status.speed, abs(last.position - status.position) < 1 {
            return
        }
        lastPrinted = status
        print("state: \(describe(status))")
    }

    private func describe(_ status: PlaybackStatus) -> String {
        let duration = status.timeRange.map { String(format: "/%.1f", $0.upperBound) } ?? ""
        return "\(status.state.rawValue) position \(String(format: "%.1f", status.position))\(duration) s, volume \(Int((status.volume * 100).rounded()))%\(status.isMuted ? " muted" : ""), speed \(status.speed)"
    }
}
