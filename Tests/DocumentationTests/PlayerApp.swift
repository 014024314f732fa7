import AVSystemRouting
import Foundation

// The app of the article "Routing media from an app" (Sources/AVSystemRouting/AVSystemRouting.docc).

@MainActor
final class Player: AVSystemRouteControllerObserver {
    let film = URL(string: "http://media.example/film.mp4")!
    var playing: AVSystemRouteMediaSession?

    static func connect(_ player: Player) -> Bool {
        AVSystemRouteController.configure(.init(applicationIdentifier: "org.example.player",
                                                supportedProtocols: ["org.mediaroute.reference"]))
        return AVSystemRouteController.shared.addObserver(player)
    }

    func systemRouteController(_ controller: AVSystemRouteController, handle event: AVSystemRouteEvent) async -> Bool {
        switch event.reason {
        case .activate:
            let session = AVSystemRouteSession(url: film, mode: .application)
            guard event.route.addSession(session) else { return false }
            do {
                let media = try await session.start()
                media.dataChannel?.dataDelegate = self
                playing = media
            } catch {
                print("could not play on \(event.route.routeDisplayName): \(error)")
            }
            return true
        case .deactivate:
            playing = nil
            return true
        }
    }

    func seekAndPlay(to seconds: Double) async throws {
        guard let control = playing?.playbackControl else { return }
        control.currentPlaybackPosition = seconds
        control.isPlaying = true
        try await control.synchronize()
    }

    func followPlayback() async {
        guard let control = playing?.playbackControl else { return }
        for await status in control.updates() {
            print("\(status.state) at \(status.position) s")
        }
    }
}
