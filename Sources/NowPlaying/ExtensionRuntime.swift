import Foundation
import MediaRouteIPC
import MediaRouteWire

/// The extension process's side of mediarouted (IPC/README.md §11.6): the handshake on descriptor
/// 3, then the supervisor's requests handed to an `ExtensionHost` on the main actor.
@MainActor
enum ExtensionRuntime {
    /// Push tokens by session id, for `pushToken` on a representable.
    private static var tokens: [String: Data] = [:]
    private static var tokenWatchers: [String: [AsyncStream<Data>.Continuation]] = [:]

    static func run<Extension: RemoteMediaSessionExtension>(_ type: Extension.Type) async {
        let socket = SupervisorChannel.adopt(as: "NowPlaying extension")
        let environment = ProcessInfo.processInfo.environment
        guard let application = environment["MEDIAROUTE_EXTENSION_APPLICATION"], !application.isEmpty else {
            fail("MEDIAROUTE_EXTENSION_APPLICATION is not set: mediarouted sets it from the manifest's \"application\"")
        }
        let host = ExtensionHost(Extension().configuration.extension)
        let name = CommandLine.arguments.first.map { String($0.split(separator: "/").last ?? Substring($0)) } ?? "extension"
        let identity = ExtensionIdentity(name: name, extensionPoint: ExtensionIdentity.remoteMediaExtensionPoint, application: application, pid: getpid())
        let connection: Connection
        do {
            connection = try await Connection.open(socket: socket, hello: Hello(role: .extension, name: name, identity: identity.object),
                                                   side: .initiator(), configuration: ConnectionConfiguration(label: "mediarouted"),
                                                   handlers: host.handlers())
        } catch {
            fail("could not join the supervisor: \(error)")
        }
        host.connection = connection
        let reason = await connection.waitUntilClosed()
        if reason.code != .connectionClosed { FileHandle.standardError.write(Data("extension: leaving: \(reason.message)\n".utf8)) }
        exit(0)
    }

    static func fail(_ message: String) -> Never { SupervisorChannel.leave("extension", message) }

    static func pushToken(of session: String) -> Data? { tokens[session] }

    /// The token now, if known, and each one after: a stream asked for before its session is made
    /// waits for it; it ends with the session.
    static func pushTokenUpdates(of session: String) -> AsyncStream<Data> {
        let (stream, continuation) = AsyncStream<Data>.makeStream()
        if let token = tokens[session] { continuation.yield(token) }
        tokenWatchers[session, default: []].append(continuation)
        return stream
    }

    static func began(_ session: String, token: Data) {
        tokens[session] = token
        for watcher in tokenWatchers[session] ?? [] { watcher.yield(token) }
    }

    static func ended(_ session: String) {
        tokens[session] = nil
        for watcher in tokenWatchers.removeValue(forKey: session) ?? [] { watcher.finish() }
    }
}
