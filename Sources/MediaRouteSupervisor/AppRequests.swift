import MediaDevice
import MediaRouteIPC

/// The methods of role `app` (IPC/README.md §11.4), and the route events an app is sent: only for
/// the protocols it declared, and only its own sessions' state and data.
enum AppRequests {
    static func register(in handlers: inout RPCHandlers, client: ControlClient, context: ControlContext) {
        let supervisor = context.supervisor
        func on(_ method: String, _ body: @escaping @Sendable (IncomingRequest, AppIdentity) async throws -> JSONValue) {
            handlers.on(method) { request in
                guard let app = client.app.withLock({ $0 }) else {
                    throw RPCError(.roleRejected, "\"\(method)\" is for apps (role app); connect as an app with your supported protocols")
                }
                return try await body(request, app)
            }
        }

        on("app.routes") { _, app in ["routes": .array(await supervisor.routes(for: app))] }
        on("app.session.start") { request, app in
            let params = request.params
            let application: String?
            switch params["mode"]?.stringValue {
            case "application"?: application = params["application"]?.stringValue ?? app.applicationIdentifier
            case "player"?: application = nil
            default: throw RPCError.invalidParams("\"mode\" must be \"application\" or \"player\"")
            }
            return try await supervisor.startSession(onRoute: try params.requiredString("route"), url: try params.requiredString("url"),
                                                     application: application, app: app)
        }
        on("app.session.stop") { request, app in
            try await supervisor.stopSession(session: try request.params.requiredString("session"), app: app)
            return .null
        }
        on("app.playback.set") { request, app in
            let params = request.params
            guard let changes = params["changes"]?.objectValue else { throw RPCError.invalidParams("\"changes\" must be an object") }
            return try await supervisor.setPlayback(session: try params.requiredString("session"), changes, app: app)
        }
        on("app.data.send") { request, app in
            let params = request.params
            guard let text = params["data"]?.stringValue, let bytes = Base64.decode(text) else {
                throw RPCError.invalidParams("\"data\" must be base64")
            }
            try await supervisor.sendData(bytes, toRoute: params["route"]?.stringValue, orSession: params["session"]?.stringValue, app: app)
            return .null
        }
    }

    /// Sends a client the events that are its business, from now until `unsubscribe`: the end of
    /// streams it opened, and for an app the route events of its protocols and its own sessions.
    static func forwardEvents(to connection: Connection, client: ClientID, app: AppIdentity?, supervisor: Supervisor) async -> Int {
        await supervisor.subscribe { event in
            if case .streamEnded(let stream, let owner, let error) = event, owner == client {
                connection.post("stream.ended", ["stream": .string(stream), "error": error])
                return
            }
            guard let app else { return }
            switch event {
            case .activated(let route, let protocolID) where app.mayUse(protocol: protocolID):
                connection.post("route.activated", ["route": route])
            case .deactivated(let route, let protocolID, let reason, let message) where app.mayUse(protocol: protocolID):
                connection.post("route.deactivated", ["route": route, "reason": .string(reason.rawValue), "message": .string(message)])
            case .updated(let route, let protocolID) where app.mayUse(protocol: protocolID):
                connection.post("route.updated", ["route": route])
            case .playback(let session, let owner, let state) where owner == app.id:
                connection.post("session.state", ["session": .string(session), "state": .object(state)])
            case .sessionEnded(let session, let owner, let state, let error) where owner == app.id:
                connection.post("session.ended", ["session": .string(session), "state": .object(state), "error": error])
            case .data(let route, let session, let protocolID, let application, let sessionOwner, let bytes):
                if sessionOwner == app.id {
                    connection.post("data.received", ["route": .string(route), "session": .string(session), "application": .string(application),
                                                      "data": .string(Base64.encode(bytes))])
                } else if sessionOwner == nil && application == app.applicationIdentifier && app.mayUse(protocol: protocolID) {
                    connection.post("data.received", ["route": .string(route), "application": .string(application), "data": .string(Base64.encode(bytes))])
                }
            default:
                break
            }
        }
    }
}
