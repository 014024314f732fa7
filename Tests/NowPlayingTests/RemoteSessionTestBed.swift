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
    /// While this file exists, the wrapped extension does not start.
    var brokenFlag: String { harness.root + "/broken" }

    /// `wrapped`: the extension is started through a shell script that refuses to start it while
    /// the file `RemoteSessionTestBed.brokenFlag` exists (a restart that fails).
    static func run(environment: [String: String] = [:], idleExitMilliseconds: Int = 30_000, mprisBusAddress: String? = nil, wrapped: Bool = false,
                    _ body: (RemoteSessionTestBed) async throws -> Void) async throws {
        try await SupervisorHarness.run { harness in
            var executable: String?
            if wrapped {
                executable = harness.root + "/extension.sh"
                let script = "#!/bin/sh\n[ -e '\(harness.root)/broken' ] && { echo 'extension: broken on purpose' >&2; exit 3; }\nexec '\(SupervisorHarness.testRemoteExtension)' \"$@\"\n"
                try Data(script.utf8).write(to: URL(fileURLWithPath: harness.root + "/extension.sh"))
                chmod(harness.root + "/extension.sh", 0o755)
            }
            try harness.addRemoteExtension(application: application, environment: environment, idleExitMilliseconds: idleExitMilliseconds,
                                           executable: executable)
            let socket = harness.root + "/mediarouted.sock"
            let supervisor = try await harness.start(mprisBusAddress: mprisBusAddress, pushListenAddress: PushListenAddress(host: "127.0.0.1", port: 0))
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

    /// Kills the extension (`SIGKILL`) and waits until the supervisor has restarted it, the
    /// `restarts`-th time, and made `session` again in the new process.
    func crashExtension(restarts: Int = 1, remaking session: String) async throws {
        let first = try #require(await extensionStatus?.pid)
        kill(first, SIGKILL)
        harness.mustBeGone(first)
        try await harness.waitUntil("a new extension process") {
            guard let status = await extensionStatus, let pid = status.pid else { return false }
            return pid != first && status.restarts == restarts
        }
        try await harness.waitUntil("\(session) made again") { await isMade(session) }
    }

    // MARK: Pushes, sent as a server sends them: with the real curl

    struct Answer: CustomStringConvertible {
        let status: Int
        let body: String
        var reason: String? { (try? JSONReader.parse(Array(body.utf8)))?.objectValue?["reason"]?.stringValue }
        var message: String { (try? JSONReader.parse(Array(body.utf8)))?.objectValue?["message"]?.stringValue ?? "" }
        var description: String { "\(status) \(body)" }
    }

    /// POSTs `aps` to `token` with the app's topic and credential (or those given). A start's answer
    /// waits for the extension to start: in the suite's first seconds, a hundred tests starting
    /// at once on two cores, that once took over 10 s (curl's limit then).
    func push(_ aps: JSONValue, to token: String, application: String = Self.application, credential: String? = nil) async throws -> Answer {
        let address = try #require(await supervisor.pushAddress)
        var secret = credential
        if secret == nil { secret = try await supervisor.pushCredential(for: application, rotate: false) }
        let run = try await CapturedCommand.run("/usr/bin/curl", [
            "-sS", "--http1.1", "--max-time", "30", "-o", "-", "-w", "\n%{http_code}",
            "-H", "apns-topic: \(application).push-type.nowplaying", "-H", "apns-push-type: nowplaying", "-H", "authorization: bearer \(secret ?? "")",
            "--data-binary", String(decoding: JSONWriter.encode(["aps": aps]), as: UTF8.self), "http://\(address)/3/device/\(token)",
        ], timeout: .seconds(40))
        let lines = run.output.split(separator: "\n", omittingEmptySubsequences: false)
        return Answer(status: Int(lines.last ?? "") ?? 0, body: lines.dropLast().joined(separator: "\n"))
    }

    /// The `aps` of a push: `attributes` as JSON from the app's own type.
    static func aps(_ event: String, _ attributes: SpeakerAttributes, timestamp: Int) throws -> JSONValue {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        return ["event": .string(event), "timestamp": .integer(Int64(timestamp)), "attributes": try JSONReader.parse(Array(try encoder.encode(attributes)))]
    }

    func startToken() async throws -> String { try await supervisor.pushToStartToken(of: Self.application) }

    /// The commands the extension passed to its "device", in order.
    var commands: [String] {
        ((try? String(contentsOfFile: commandLog, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }
}
