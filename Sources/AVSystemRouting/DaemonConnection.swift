import Foundation
import MediaRouteIPC
import MediaRouteWire
import Synchronization

/// An app's connection to mediarouted (role `app`), made again when the daemon comes back.
///
/// Everything the daemon says arrives, in order, on `inbound`, between a `.connected` and a
/// `.disconnected`; the controller consumes it on one task.
final class DaemonConnection: Sendable {
    enum Inbound: Sendable {
        case connected
        case event(DaemonEvent)
        case disconnected(reason: String)
    }

    let socketPath: String
    private let hello: Hello
    let inbound: AsyncStream<Inbound>
    private let continuation: AsyncStream<Inbound>.Continuation

    private enum Link {
        case down
        case connecting([CheckedContinuation<Connection?, Never>])
        case up(Connection)
    }
    private let link = Mutex(Link.down)
    /// Whether to keep reconnecting (an observer is registered).
    private let wanted = Atomic<Bool>(false)
    /// Closed for good: a handshake that finishes after this is undone.
    private let closed = Atomic<Bool>(false)
    /// Why the last attempt failed, for requests made while the daemon is away.
    private let lastFailure = Mutex<String?>(nil)

    static let reconnectInterval: Duration = .seconds(1)

    init(socketPath: String, applicationIdentifier: String, supportedProtocols: [String]) {
        self.socketPath = socketPath
        let identity = AppHelloIdentity(name: applicationIdentifier, applicationIdentifier: applicationIdentifier, supportedProtocols: supportedProtocols)
        hello = Hello(role: .app, name: applicationIdentifier, identity: identity.object)
        (inbound, continuation) = AsyncStream.makeStream()
    }

    /// Connects now if not connected (the socket at once, the handshake in the background).
    /// False when nothing listens at the socket: the daemon is not running.
    func connect() -> Bool {
        wanted.store(true, ordering: .relaxed)
        return attempt()
    }

    private func attempt() -> Bool {
        guard !closed.load(ordering: .acquiring) else { return false }
        let start = link.withLock { link -> Bool in
            if case .down = link {
                link = .connecting([])
                return true
            }
            return false
        }
        guard start else { return true }
        let fd: Int32
        do {
            fd = try UnixSocket.connect(path: socketPath)
        } catch {
            lastFailure.withLock { $0 = "mediarouted is not running (nothing listens on \(socketPath))" }
            finishConnecting(nil)
            return false
        }
        Task { await handshake(fd) }
        return true
    }

    /// Stops reconnecting once the connection drops (no observer is left).
    func release() { wanted.store(false, ordering: .relaxed) }

    /// Closes the connection for good; `inbound` ends after its last `.disconnected`.
    func close() async {
        wanted.store(false, ordering: .relaxed)
        closed.store(true, ordering: .releasing)
        let connection = link.withLock { link -> Connection? in
            if case .up(let connection) = link { return connection }
            return nil
        }
        if let connection {
            await connection.close()  // the handshake task then reports the disconnection and ends the stream
        } else {
            continuation.finish()
        }
    }

    private func handshake(_ fd: Int32) async {
        let handlers = DaemonEvent.handlers { [continuation] in continuation.yield(.event($0)) }
        let connection: Connection
        do {
            connection = try await Connection.open(socket: fd, hello: hello, side: .initiator(),
                                                   configuration: ConnectionConfiguration(label: "mediarouted"), handlers: handlers)
        } catch {
            let reason = "mediarouted refused the connection: \(error)"
            lastFailure.withLock { $0 = reason }
            finishConnecting(nil)
            continuation.yield(.disconnected(reason: reason))
            scheduleReconnect()
            return
        }
        if closed.load(ordering: .acquiring) {
            // close() came during the handshake: nobody is left to read this connection.
            finishConnecting(nil)
            await connection.close()
            continuation.finish()
            return
        }
        continuation.yield(.connected)
        finishConnecting(connection)
        let reason = await connection.waitUntilClosed()
        link.withLock { $0 = .down }
        continuation.yield(.disconnected(reason: reason.message))
        if wanted.load(ordering: .relaxed) { scheduleReconnect() } else { continuation.finish() }
    }

    private func finishConnecting(_ connection: Connection?) {
        let waiters = link.withLock { link -> [CheckedContinuation<Connection?, Never>] in
            guard case .connecting(let waiters) = link else { return [] }
            link = connection.map { .up($0) } ?? .down
            return waiters
        }
        waiters.forEach { $0.resume(returning: connection) }
    }

    private func scheduleReconnect() {
        Task {
            while wanted.load(ordering: .relaxed), !closed.load(ordering: .acquiring) {
                try? await Task.sleep(for: Self.reconnectInterval)
                if wanted.load(ordering: .relaxed), attempt() { return }
            }
        }
    }

    /// The connection, waiting for a handshake in progress; nil while the daemon is away.
    private func current() async -> Connection? {
        await withCheckedContinuation { continuation in
            let ready: Connection?? = link.withLock { link in
                switch link {
                case .up(let connection): return .some(connection)
                case .down: return .some(nil)
                case .connecting(var waiters):
                    waiters.append(continuation)
                    link = .connecting(waiters)
                    return .none
                }
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// One request to the daemon, and its typed answer. Its errors become the app's
    /// (`MediaDeviceError`, `AVSystemRoutingError`); an answer that does not decode is a
    /// `.protocolError` naming the method and the member.
    @discardableResult
    func call<Request: WireRequest>(_ request: Request) async throws -> Request.Result {
        let connection = try await connected()
        do {
            return try await connection.call(request)
        } catch {
            throw AVSystemRoutingError.from(error)
        }
    }

    /// The same, with the descriptors that came with the answer.
    func callReceivingDescriptors<Request: WireRequest>(_ request: Request) async throws -> (Request.Result, ReceivedDescriptors) {
        let connection = try await connected()
        do {
            return try await connection.callReceivingDescriptors(request)
        } catch {
            throw AVSystemRoutingError.from(error)
        }
    }

    private func connected() async throws(AVSystemRoutingError) -> Connection {
        guard let connection = await current() else {
            throw AVSystemRoutingError(.unavailable, lastFailure.withLock { $0 } ?? "mediarouted is not running (nothing listens on \(socketPath))")
        }
        return connection
    }
}
