import Foundation
import Logging
import MediaDevice
import MediaRouteIPC
import Synchronization

/// The supervisor's public socket: the CLI (role `control`) and apps (role `app`) connect here.
/// Each client's pickers close, its pairing prompts are cancelled, and (for apps) its sessions stop
/// when it disconnects.
public final class ControlServer: Sendable {
    public let path: String
    private let listener: UnixListener

    /// Connections one user may hold open at once, by default: far more than apps and CLIs use,
    /// few enough that a runaway or hostile program of that user cannot exhaust the daemon.
    public static let defaultConnectionsPerUser = 128

    public static func start(path: String, supervisor: Supervisor, logger: Logger,
                             connectionsPerUser: Int = defaultConnectionsPerUser) async throws -> ControlServer {
        let context = ControlContext(supervisor: supervisor, logger: logger, started: .now, socketPath: path, apps: ConnectedApps())
        let census = ConnectionCensus(limit: connectionsPerUser)
        let trim = HeapTrim(loop: supervisor.loop)
        let listener = try await UnixListener(path: path, loop: supervisor.loop, onRefused: { logger.warning("\($0)") }) { socket, peer in
            guard census.admit(peer.uid) else {
                let refusal = RPCError(.overloaded, "user \(peer.uid) already has \(census.limit) connections open to mediarouted, its limit; close some and try again")
                logger.warning("refused a connection from pid \(peer.pid): \(refusal.message)")
                UnixListener.refuse(socket, with: refusal)
                return
            }
            // On the loop, what `serve` does after the handshake (subscribing the client to route
            // events) runs before the loop reads the client's first request; on the global pool it
            // could wait behind a busy machine while the app already works, and miss its events.
            Task(executorPreference: supervisor.loop) {
                await ControlClient.serve(socket: socket, pid: peer.pid, context: context)
                census.leave(peer.uid)
                trim.soon()
            }
        }
        return ControlServer(path: path, listener: listener)
    }

    private init(path: String, listener: UnixListener) {
        self.path = path
        self.listener = listener
    }

    public func close() { listener.close() }
}

/// What every client's handlers share.
struct ControlContext: Sendable {
    let supervisor: Supervisor
    let logger: Logger
    let started: ContinuousClock.Instant
    let socketPath: String
    let apps: ConnectedApps
}

/// One connected client: the pickers it holds open and, for an app, who it is.
final class ControlClient: Sendable {
    let pickers = Mutex<[Int]>([])
    /// Set during the handshake when the client is an app; nil for the operator's CLI.
    let app = Mutex<AppIdentity?>(nil)

    let id = ClientID.next()

    static func serve(socket: Int32, pid: pid_t, context: ControlContext) async {
        let client = ControlClient()
        var configuration = ConnectionConfiguration(label: "client (pid \(pid))")
        configuration.acceptHello = { hello throws(RPCError) in
            guard hello.role == .app else { return }
            let identity = try AppIdentity(id: client.id, hello: hello)
            try context.apps.claim(identity.applicationIdentifier, pid: pid)
            client.app.withLock { $0 = identity }
        }
        var handlers = RPCHandlers()
        ControlRequests.register(in: &handlers, client: client, context: context)
        AppRequests.register(in: &handlers, client: client, context: context)
        StreamRequests.register(in: &handlers, client: client, context: context)
        // Known before its first request can arrive (right after the handshake).
        await context.supervisor.clientConnected(client.id)
        let connection: Connection
        do {
            connection = try await Connection.open(socket: socket, hello: Hello(role: .supervisor, name: "mediarouted"),
                                                   side: .acceptor(acceptingRoles: [.control, .app]), loop: context.supervisor.loop,
                                                   configuration: configuration, handlers: handlers)
        } catch {
            context.logger.notice("client (pid \(pid)) did not connect: \(error)")
            if let app = client.app.withLock({ $0 }) { context.apps.release(app.applicationIdentifier) }
            await context.supervisor.clientLeft(client.id, name: "client (pid \(pid))")
            return
        }
        let app = client.app.withLock { $0 }
        defer { if let app { context.apps.release(app.applicationIdentifier) } }
        let subscription = await AppRequests.forwardEvents(to: connection, client: client.id, app: app, supervisor: context.supervisor)
        if let app, let token = await context.supervisor.existingPushToStartToken(of: app.applicationIdentifier) {
            connection.post(ToApp.PushToStartTokenChanged(token: token))
        }
        _ = await connection.waitUntilClosed()
        await context.supervisor.unsubscribe(subscription)
        for picker in client.pickers.withLock({ $0 }) { await context.supervisor.closePicker(picker) }
        await context.supervisor.clientLeft(client.id, name: app.map { "app \($0.applicationIdentifier)" } ?? "the operator's CLI")
    }
}

extension RPCHandlers {
    /// Answers a typed request; media-device errors travel with their own codes.
    mutating func answer<Request: WireRequest>(_ type: Request.Type, _ body: @escaping @Sendable (Request, IncomingRequest) async throws -> Request.Result) {
        on(type) { request, incoming in
            do { return try await body(request, incoming) } catch let error as MediaDeviceError { throw error.rpcError }
        }
    }

    /// The same, for an answer that carries descriptors.
    mutating func answer<Request: WireRequest>(_ type: Request.Type,
                                               _ body: @escaping @Sendable (Request, IncomingRequest) async throws -> (Request.Result, [Int32])) {
        on(type, replying: { request, incoming in
            do { return try await body(request, incoming) } catch let error as MediaDeviceError { throw error.rpcError }
        })
    }
}
