import Foundation
import MediaRouteIPC
import Synchronization

/// A stand-in for mediarouted on a socket of its own, saying what a test makes it say: for
/// messages the real daemon never sends (a route this library cannot read).
final class FakeDaemon: Sendable {
    let path: String
    private let listener: UnixListener
    private let accepted = Accepted()

    /// The connections made, shared with the listener's callback.
    private final class Accepted: Sendable {
        let list = Mutex<[Connection]>([])
    }

    /// Listens at a fresh path; each app that connects is answered by `handlers`.
    init(handlers: RPCHandlers) async throws {
        path = NSTemporaryDirectory() + "fake-mediarouted-\(UUID().uuidString.prefix(8))/mediarouted.sock"
        let accepted = accepted
        listener = try await UnixListener(path: path) { socket, _ in
            Task {
                guard let connection = try? await Connection.open(socket: socket, hello: Hello(role: .supervisor, name: "fake mediarouted"),
                                                                  side: .acceptor(acceptingRoles: [.app]),
                                                                  configuration: ConnectionConfiguration(label: "app"), handlers: handlers) else { return }
                accepted.list.withLock { $0.append(connection) }
            }
        }
    }

    /// The app connected (its handshake done), if it has.
    var app: Connection? { accepted.list.withLock { $0.last } }

    /// A route as the daemon describes one (§11.3), with the device's `capabilities` as given.
    static func route(_ session: String, capabilities: JSONValue = ["urlPlayback"]) -> JSONValue {
        ["session": .string(session), "protocol": "org.test.alpha", "protocolName": "Test alpha",
         "device": ["id": .string("org.test.alpha/\(session)"), "displayName": .string("TV \(session)"), "capabilities": capabilities,
                    "deviceType": "tv", "volumeControl": "absolute", "canMute": true],
         "simultaneousSessions": false, "busy": false]
    }

    func stop() async {
        listener.close()
        for connection in accepted.list.withLock({ $0 }) { await connection.close() }
        try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent)
    }
}
