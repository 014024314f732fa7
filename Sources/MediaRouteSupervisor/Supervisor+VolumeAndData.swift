import MediaDevice
import MediaRouteIPC

/// Volume of active devices, data between apps and the devices' applications, listings, and the
/// clean-up when a client goes.
extension Supervisor {
    public enum VolumeAction: Sendable {
        case get, set(Double), change(Int), mute, unmute
    }

    /// Reads or changes the volume of an active device, checking the device's volume control.
    /// A level travels as given: 0.3 reaches the driver as 0.3.
    package func volume(_ device: String, _ action: VolumeAction) async throws -> RouteDescription {
        let route = try routes.named(device)
        try route.requireDevice()
        let target = route.device
        switch (action, target.volumeControl) {
        case (.set, .absolute), (.change, .relative), (.change, .absolute), (.get, _): break
        case (.mute, _), (.unmute, _):
            guard target.canMute else { throw MediaDeviceError(.unsupported, "\(target.displayName) cannot be muted") }
        case (.set, let control), (.change, let control):
            throw MediaDeviceError(.unsupported, "\(target.displayName) has \(control == .none ? "no volume control" : "only relative volume (use +N or -N)")")
        }
        switch action {
        case .get: break
        case .set(let level):
            guard (0...1).contains(level) else { throw MediaDeviceError(.unsupported, "volume \(level) is outside 0...1") }
            try await call(route.record, ToDriver.SetVolume(device: target, volume: level))
        case .change(let steps):
            guard (-100...100).contains(steps) else { throw MediaDeviceError(.unsupported, "a volume change of \(steps) steps is outside -100...100") }
            try await call(route.record, ToDriver.ChangeVolume(device: target, by: steps))
        case .mute: try await call(route.record, ToDriver.Mute(device: target))
        case .unmute: try await call(route.record, ToDriver.Unmute(device: target))
        }
        let reading = try await call(route.record, ToDriver.GetVolume(device: target))
        volumeChanged(route, volume: reading.volume, muted: reading.muted)
        if case .get = action {} else { persist(.devices, immediately: true) }
        return route.description
    }

    func volumeChanged(_ route: ActiveRoute, volume: Float?, muted: Bool?) {
        guard route.volume != volume || route.muted != muted else { return }
        route.volume = volume
        route.muted = muted
        rememberVolume(of: route)
        announceUpdate(route)
    }

    /// Sends `data` to the application `application` on the device of an active route
    /// (the driver's `receiveData(_:fromApplication:session:)`): the operator's way in.
    public func sendData(_ data: [UInt8], toApplication application: String, device: String) async throws {
        try await forward(Base64Payload(data), to: try routes.named(device), application: application)
    }

    /// An app's data: on the route-level channel (`route`) it is addressed from the app's own
    /// identifier; on a session's channel, to the application the session launched on the device.
    /// The base64 text goes on as it came: checked, not decoded.
    func sendData(_ data: Base64Payload, toRoute route: String?, orSession session: String?, app: AppIdentity) async throws {
        if let route {
            try await forward(data, to: try routes.route(route, for: .app(app), closing: "; its data channel is closed"), application: app.applicationIdentifier)
        } else if let session {
            let target = try routes.session(session, for: .app(app))
            guard let application = target.application else {
                throw MediaDeviceError(.unsupported, "session \(session) plays in the device's player (.player mode), which has no data channel")
            }
            if target.isSessionParked {
                try target.requireDevice()
                throw MediaDeviceError(.sessionFailed, "session \(session) waits paused, off \(target.device.displayName); resume it first")
            }
            try await forward(data, to: target, application: application)
        } else {
            throw MediaDeviceError(.deviceNotFound, "data needs a \"route\" or a \"session\" to go to")
        }
    }

    private func forward(_ data: Base64Payload, to route: ActiveRoute, application: String) async throws {
        try route.requireDevice()
        guard data.byteCount <= Self.maximumDataMessage else {
            throw MediaDeviceError(.unsupported, "a data message of \(data.byteCount) bytes is over the \(Self.maximumDataMessage)-byte limit; split it")
        }
        try await call(route.record, ToDriver.DataToDevice(session: route.session.id, application: application, data: data))
    }

    /// Data a device's application sent: for the app whose session it belongs to, else for the
    /// route-level channel of the app the device named.
    func dataFromDevice(_ report: FromDriver.DataToApplication, record: DriverRecord) throws(RPCError) {
        // A route that just ended is dropped quietly: the driver may not have heard of it yet.
        guard let route = routes[report.session] else { return }
        guard route.record === record else { throw .invalidParams("sent data for session \(report.session), which is another driver's route") }
        guard report.data.byteCount <= Self.maximumDataMessage else {
            throw .invalidParams("session.dataToApplication: \"data\" holds \(report.data.byteCount) bytes, over the \(Self.maximumDataMessage)-byte limit")
        }
        let sessionOwner = route.playback != nil && route.application == report.application ? route.mediaOwner : nil
        publish(.data(route: route.parent ?? route.session.id, session: route.session.id, protocolID: record.id, application: report.application,
                      sessionOwner: sessionOwner, data: report.data))
    }

    // MARK: Listing and clean-up

    package func activeRoutes() -> [RouteDescription] { routes.visible(to: .operator) }

    func visibleRoutes(for requester: Requester) -> [RouteDescription] { routes.visible(to: requester) }

    /// A connection went away: its streams stop, the routes it activated end, and so do the
    /// sessions it started.
    /// Connected clients the supervisor has not yet seen leave.
    var connectedClients: Int { routes.clients.count }

    func clientLeft(_ owner: ClientID, name: String) async {
        routes.clients.remove(owner)
        stopStreams(ownedBy: owner)
        for route in routes.all where route.owner == owner && route.parent == nil {
            await endRoute(route, reason: .override, message: "\(name), which activated it, disconnected")
        }
        for route in routes.all where route.mediaOwner == owner {
            route.endSession()
            if route.parent != nil {
                await endRoute(route, reason: .override, message: "\(name), whose session it carried, disconnected")
            } else {
                _ = try? await call(route.record, ToDriver.StopSession(session: route.session.id))
                announceUpdate(route)
            }
        }
    }
}
