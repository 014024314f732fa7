import MediaRouteWire

/// The active routes, the activations and session starts waiting for their driver's report, and
/// the clients still connected: what the supervisor knows about routes, and how a client names one.
final class RouteTable {
    /// Active routes by session id.
    private(set) var routes: [String: ActiveRoute] = [:]
    /// Activations and sessions waiting for their driver's report, by session id.
    var mailboxes: [String: SessionMailbox] = [:]
    /// Clients still connected: what outlives a request is recorded only for them.
    var clients = Set<ClientID>()
    private var nextSessionNumber = 1
    private var nextStreamNumber = 1

    func makeSessionID() -> String {
        defer { nextSessionNumber += 1 }
        return "s\(nextSessionNumber)"
    }

    func makeStreamID() -> String {
        defer { nextStreamNumber += 1 }
        return "r\(nextStreamNumber)"
    }

    subscript(session: String) -> ActiveRoute? { routes[session] }

    func add(_ route: ActiveRoute) { routes[route.session.id] = route }
    func remove(_ route: ActiveRoute) { routes[route.session.id] = nil }

    /// Whether `route` is still the one registered under its session.
    func isCurrent(_ route: ActiveRoute) -> Bool { routes[route.session.id] === route }

    /// Every route, oldest session first.
    var all: [ActiveRoute] { routes.values.sorted { $0.session.id.count == $1.session.id.count ? $0.session.id < $1.session.id : $0.session.id.count < $1.session.id.count } }

    func routes(of record: DriverRecord) -> [ActiveRoute] { routes.values.filter { $0.record === record } }
    func children(of route: ActiveRoute) -> [ActiveRoute] { routes.values.filter { $0.parent == route.session.id } }
    func uses(_ record: DriverRecord) -> Bool { routes.values.contains { $0.record === record } }
    /// Whether an activation or session start through `record` is waiting for the driver's answer.
    func isWaiting(on record: DriverRecord) -> Bool { mailboxes.values.contains { $0.protocolID == record.id } }

    /// The main route to a device of `record`, if it is active.
    func mainRoute(to device: String, of record: DriverRecord) -> ActiveRoute? {
        routes.values.first { $0.parent == nil && $0.record === record && $0.device.id == device }
    }

    /// The active route to `device`: a session id, or a device name or id (its main route, not a child).
    func named(_ device: String) throws(MediaDeviceError) -> ActiveRoute {
        let key = PickerEntry.key(device)
        if let route = routes[device] ?? routes.values.first(where: { $0.parent == nil && (PickerEntry.key($0.device.displayName) == key || $0.device.id == device) }) {
            return route
        }
        throw MediaDeviceError(.deviceNotFound, "\"\(device)\" is not active; `mediaroute activate \"\(device)\"` first")
    }

    /// The route `requester` means: for an app, one of its main routes by id (`closing` ends the
    /// sentence for a route that is gone); for the operator, any route by session id or device.
    func route(_ identifier: String, for requester: Requester, closing: String = "") throws(MediaDeviceError) -> ActiveRoute {
        guard case .app(let app) = requester else { return try named(identifier) }
        guard let route = routes[identifier], route.parent == nil else {
            throw MediaDeviceError(.deviceNotFound, "route \(identifier) is not active (it may have been deactivated)\(closing)")
        }
        try app.check(route)
        return route
    }

    /// The route a session plays on: an app's own sessions only; the operator's by any name.
    func session(_ session: String, for requester: Requester) throws(MediaDeviceError) -> ActiveRoute {
        guard case .app(let app) = requester else { return try named(session) }
        guard let route = routes[session], route.playback != nil, route.mediaOwner == app.id else {
            throw MediaDeviceError(.deviceNotFound, "session \(session) is not one of \(app.applicationIdentifier)'s playing sessions (it may have ended)")
        }
        return route
    }

    /// The routes a requester may see: for an app, the main routes of its protocols.
    func visible(to requester: Requester) -> [RouteDescription] {
        guard case .app(let app) = requester else { return all.map(\.description) }
        return all.filter { $0.parent == nil && app.mayUse(protocol: $0.record.id) }.map(\.description)
    }
}

/// Who asks: the operator (the CLI, role `control`) or an app. One implementation serves both;
/// an app sees and uses only routes of its protocols and only its own sessions.
enum Requester: Sendable {
    case `operator`
    case app(AppIdentity)

    var app: AppIdentity? { if case .app(let app) = self { app } else { nil } }
    var client: ClientID? { app?.id }
}
