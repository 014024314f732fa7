import MediaDevice
import MediaRouteIPC

/// The methods of role `app` (IPC/README.md §11.4), and the route events an app is sent: only for
/// the protocols it declared, and only its own sessions' state and data.
enum AppRequests {
    static func register(in handlers: inout RPCHandlers, client: ControlClient, context: ControlContext) {
        let supervisor = context.supervisor
        func on<Request: WireRequest>(_ type: Request.Type, _ body: @escaping @Sendable (Request, AppIdentity) async throws -> Request.Result) {
            handlers.answer(type) { request, _ in
                guard let app = client.app.withLock({ $0 }) else {
                    throw RPCError(.roleRejected, "\"\(Request.method)\" is for apps (role app); connect as an app with your supported protocols")
                }
                return try await body(request, app)
            }
        }

        on(App.Routes.self) { _, app in .init(routes: await supervisor.visibleRoutes(for: .app(app))) }
        on(App.StartSession.self) { request, app in
            let application = switch request.mode {
            case .application: request.application ?? app.applicationIdentifier
            case .player: nil as String?
            }
            return try await supervisor.startSession(on: try nonEmpty(request.route, "route"), url: try nonEmpty(request.url, "url"),
                                                     application: application, by: .app(app))
        }
        on(App.StopSession.self) { request, app in
            try await supervisor.stopSession(session: try nonEmpty(request.session, "session"), by: .app(app))
            return NoResult()
        }
        on(App.SetPlayback.self) { request, app in
            try await supervisor.setPlayback(session: try nonEmpty(request.session, "session"), request.changes, by: .app(app))
        }
        on(App.SendData.self) { request, app in
            try await supervisor.sendData(request.data, toRoute: request.route, orSession: request.session, app: app)
            return NoResult()
        }
        on(App.StartRemoteSession.self) { request, app in
            try await supervisor.startRemoteSession(application: app.applicationIdentifier, attributes: request.attributes, origin: .app)
        }
        on(App.UpdateRemoteSession.self) { request, app in
            _ = try await supervisor.updateRemoteSession(application: app.applicationIdentifier, id: request.id, attributes: request.attributes, origin: .app)
            return NoResult()
        }
        on(App.EndRemoteSession.self) { request, app in
            try await supervisor.endRemoteSession(application: app.applicationIdentifier, id: request.id)
            return NoResult()
        }
        on(App.RemoteSessions.self) { _, app in .init(sessions: await supervisor.remoteSessions(of: app.applicationIdentifier)) }
        on(App.BecomeSystemPrimary.self) { request, app in
            try await supervisor.makeSystemPrimary(application: app.applicationIdentifier, id: request.id)
            return NoResult()
        }
        on(App.PushToStartToken.self) { _, app in .init(token: try await supervisor.pushToStartToken(of: app.applicationIdentifier)) }
    }

    /// Sends a client the events that are its business, from now until `unsubscribe`: the end of
    /// streams it opened, and for an app the route events of its protocols and its own sessions.
    static func forwardEvents(to connection: Connection, client: ClientID, app: AppIdentity?, supervisor: Supervisor) async -> Int {
        await supervisor.subscribe { event in
            if case .streamEnded(let stream, let owner, let error) = event, owner == client {
                connection.post(Streams.Ended(stream: stream, error: error))
                return
            }
            guard let app else { return }
            switch event {
            case .activated(let route) where app.mayUse(protocol: route.protocol):
                connection.post(ToApp.RouteActivated(route: route))
            case .deactivated(let route, let reason, let message) where app.mayUse(protocol: route.protocol):
                connection.post(ToApp.RouteDeactivated(route: route, reason: reason, message: message))
            case .updated(let route) where app.mayUse(protocol: route.protocol):
                connection.post(ToApp.RouteUpdated(route: route))
            case .playback(let session, let owner, let state) where owner == app.id:
                connection.post(ToApp.SessionState(session: session, state: state))
            case .sessionEnded(let session, let owner, let state, let error) where owner == app.id:
                connection.post(ToApp.SessionEnded(session: session, state: state, error: error))
            case .pushToStartToken(let application, let token) where application == app.applicationIdentifier:
                connection.post(ToApp.PushToStartTokenChanged(token: token))
            case .remoteCommand(let route, let command, let streamOwners) where streamOwners.contains(client):
                connection.post(ToApp.RemoteCommand(route: route, command: command))
            case .data(let route, let session, let protocolID, let application, let sessionOwner, let data):
                if sessionOwner == app.id {
                    connection.post(ToApp.DataReceived(route: route, session: session, application: application, data: data))
                } else if sessionOwner == nil && application == app.applicationIdentifier && app.mayUse(protocol: protocolID) {
                    connection.post(ToApp.DataReceived(route: route, session: nil, application: application, data: data))
                }
            default:
                break
            }
        }
    }
}
