import Foundation
import NowPlaying

// The app side of "Publishing remote media sessions".

@MainActor
enum SpeakerApp {
    static func play(_ attributes: SpeakerAttributes) async throws -> RemoteMediaSession<SpeakerAttributes> {
        let session = try await RemoteMediaSession.start(attributes: attributes)
        try await session.requestToBecomeSystemPrimary()
        return session
    }

    static func pause(_ session: RemoteMediaSession<SpeakerAttributes>, at elapsed: Double, _ attributes: SpeakerAttributes) async throws {
        var paused = attributes
        paused.isPlaying = false
        paused.elapsed = elapsed
        paused.updatedAt = Date()
        try await session.update(paused)
    }

    static func stop(_ session: RemoteMediaSession<SpeakerAttributes>) async {
        do {
            try await session.end()
        } catch RemoteMediaSessionError.internalFailure {
            print("mediarouted could not end the session")
        } catch {
            print(error)
        }
    }

    static func sendPushToStartTokens() async {
        for await token in RemoteMediaSession<SpeakerAttributes>.pushToStartTokenUpdates {
            let hex = token.map { String(format: "%02x", $0) }.joined()
            print("tell the server: start sessions with pushes to \(hex)")
        }
    }
}
