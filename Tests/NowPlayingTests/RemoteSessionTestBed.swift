import AVSystemRouting
import Foundation
import MediaRouteIPC
import MediaRouteWire
@testable import MediaRouteSupervisor
import NowPlaying
import PrivateDaemons
import Testing
import TestSupport

/// The attributes the test extension reads: the specification's own example, as an app would keep them.
struct SpeakerAttributes: RemoteMediaSessionAttributes, Equatable {
    struct Track: Codable, Equatable {
        var id: String
        var title: String
        var artist: String
        var album: String
        var duration: Double
        var artworkURL: String?
    }

    struct Device: Codable, Equatable {
        var id: String
        var name: String
        var type: String?
        var volume: Double?
    }

    var id: String
    var isPlaying: Bool
    var elapsedTime: Double
    var timestamp: Date
    var currentTrack: Track?
    var devices: [Device]
    var queueCount: Int
    var currentTrackIndex: Int

    static func playing(_ id: String, title: String = "Song Title", index: Int = 0) -> SpeakerAttributes {
        SpeakerAttributes(id: id, isPlaying: true, elapsedTime: 12, timestamp: Date(),
                          currentTrack: Track(id: "track-\(index + 1)", title: title, artist: "Name of Artist", album: "Title of the Album", duration: 237),
                          devices: [Device(id: "living-room-speaker", name: "Living Room Speaker", type: "speaker", volume: 0.65)],
                          queueCount: 5, currentTrackIndex: index)
    }
}

/// An in-process supervisor serving its socket, the test extension making `application`'s
/// remote sessions, and an app's controller on the socket.
struct RemoteSessionTestBed {
    static let application = "org.test.speaker-app"
    let harness: SupervisorHarness
    let supervisor: Supervisor
    let controller: AVSystemRouteController
    var commandLog: String { harness.root + "/commands.log" }

    static func run(environment: [String: String] = [:], idleExitMilliseconds: Int = 30_000, mprisBusAddress: String? = nil,
                    _ body: (RemoteSessionTestBed) async throws -> Void) async throws {
        try await SupervisorHarness.run { harness in
            try harness.addRemoteExtension(application: application, environment: environment, idleExitMilliseconds: idleExitMilliseconds)
            let socket = harness.root + "/mediarouted.sock"
            let supervisor = try await harness.start(mprisBusAddress: mprisBusAddress)
            let server = try await ControlServer.start(path: socket, supervisor: supervisor, logger: harness.log.logger)
            defer { server.close() }
            let controller = AVSystemRouteController(configuration: .init(applicationIdentifier: application, supportedProtocols: [], socketPath: socket))
            try await withTearDown {
                try await body(RemoteSessionTestBed(harness: harness, supervisor: supervisor, controller: controller))
            } tearDown: {
                await controller.invalidate()
            }
        }
    }

    /// The supervisor's view of the app's session `id`.
    func shown(_ id: String) async -> RemoteSessionState? { await supervisor.remoteSession(application: Self.application, id: id)?.state }

    func key(_ id: String) async -> String? { await supervisor.remoteSession(application: Self.application, id: id)?.key }

    func isMade(_ id: String) async -> Bool { await supervisor.remoteSession(application: Self.application, id: id)?.isMade == true }

    var extensionStatus: DriverStatus? { get async { await harness.status("org.test.nowplaying") } }

    /// The commands the extension passed to its "device", in order.
    var commands: [String] {
        ((try? String(contentsOfFile: commandLog, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }
}
