import Foundation
import Synchronization
import UPnP

/// The driver's HTTP side on one of our addresses: the GENA callbacks renderers NOTIFY, and the
/// media they fetch from us. One per local address, shared by every renderer reached through it.
final class LocalEndpoint: Sendable {
    typealias EventHandler = @Sendable (HTTPServer.Request) async -> HTTPServer.Response
    let address: String
    let media: MediaServer
    private let server: HTTPServer
    private let routes: EventRoutes

    private init(address: String, server: HTTPServer, media: MediaServer, routes: EventRoutes) {
        self.address = address
        self.server = server
        self.media = media
        self.routes = routes
    }

    static func start(on address: String) async throws -> LocalEndpoint {
        let routes = EventRoutes()
        let media = MediaServer()
        let server = try await HTTPServer.start(host: address) { request in
            if let answer = await media.handle(request) { return answer }
            if let handler = routes.table.withLock({ $0[request.path] }) { return await handler(request) }
            // GENA asks for 412 when a NOTIFY names a subscription we do not have (UDA 2.0 §4.3).
            return HTTPServer.Response(status: request.method.rawValue == "NOTIFY" ? .preconditionFailed : .notFound)
        }
        return LocalEndpoint(address: address, server: server, media: media, routes: routes)
    }

    func url(_ path: String) -> URL? { URL(string: "http://\(address):\(server.port)\(path)") }

    /// The callback path of `route` (an unguessable token), whose NOTIFYs go to `handler`.
    func addEventRoute(_ route: String, _ handler: @escaping EventHandler) -> String {
        let path = eventPath(route)
        routes.table.withLock { $0[path] = handler }
        return path
    }

    func eventPath(_ route: String) -> String { "/events/" + route }

    func removeEventRoute(_ path: String) { _ = routes.table.withLock { $0.removeValue(forKey: path) } }

    func close() async { await server.close() }
}

/// Event callback paths (unguessable) and who handles them, shared with the server's handler.
private final class EventRoutes: Sendable {
    let table = Mutex<[String: LocalEndpoint.EventHandler]>([:])
}
