import Foundation
import MediaDevice
import MediaRouteIPC

/// Activation, pairing, sessions, playback and volume: the part of the lifecycle after the picker.
extension Supervisor {
    /// How long a driver may take to report an activation or session outcome.
    static let outcomeTimeout: Duration = .seconds(60)

    /// Finds a picker entry by name (case- and space-insensitive) or a device by id.
    func resolve(_ device: String, protocolID: String?) throws -> (DriverRecord, MediaOutputDevice) {
        let key = PickerEntry.key(device)
        let entry = pickerEntries().first { PickerEntry.key($0.name) == key }
            ?? pickerEntries().first { $0.routes.contains { $0.device.id == device } }
        guard let entry else {
            throw MediaDeviceError(.deviceNotFound, "no device \"\(device)\" is in the picker; run `mediaroute devices` to discover devices")
        }
        let wanted = protocolID ?? entry.preferredProtocol
        guard let route = entry.routes.first(where: { $0.protocolID == wanted || $0.device.id == device && protocolID == nil }) else {
            throw MediaDeviceError(.unsupported, "\"\(entry.name)\" is not reachable through \(wanted); it is through \(entry.routes.map(\.protocolID).joined(separator: ", "))")
        }
        return (try record(route.protocolID), route.device)
    }

    /// The active route to `device` (by name, id or session id).
    func activeRoute(_ device: String) throws -> ActiveRoute {
        let key = PickerEntry.key(device)
        if let route = routes[device] ?? routes.values.first(where: { PickerEntry.key($0.device.displayName) == key || $0.device.id == device }) {
            return route
        }
        throw MediaDeviceError(.deviceNotFound, "\"\(device)\" is not active; `mediaroute activate \"\(device)\"` first")
    }

    /// Activates a device, asking `pairing` for a code when the driver wants one (nil: cancelled).
    /// Returns the active route; activating an active device returns its route.
    public func activate(_ device: String, protocolID: String? = nil, owner: ObjectIdentifier? = nil,
                         pairing: @escaping @Sendable (PairingRequest) async -> String?) async throws -> JSONValue {
        let (record, target) = try resolve(device, protocolID: protocolID)
        if let existing = routes.values.first(where: { $0.record === record && $0.device.id == target.id }) { return existing.json }
        let process = try await ensureRunning(record)
        if !process.supportsSimultaneousSessions, let busy = routes.values.first(where: { $0.record === record }) {
            throw MediaDeviceError(.busy, "driver \(record.id) runs one session at a time and \(busy.device.displayName) is active; deactivate it first")
        }
        let session = MediaOutputSession(id: makeSessionID())
        let mailbox = SessionMailbox(record: record)
        mailboxes[session.id] = mailbox
        defer { mailboxes[session.id] = nil }
        let timeout = loop.schedule(after: Self.outcomeTimeout) {
            mailbox.deliver(.aborted(MediaDeviceError(.timedOut, "driver \(record.id) reported no activation result for \(target.displayName) within \(Self.outcomeTimeout)")))
        }
        defer { loop.cancelTimer(timeout) }
        _ = try await call(record, DriverMethod.activate, ["device": target.json, "session": .string(session.id),
                                                           "features": .array(target.capabilities.names.map { .string($0) })])
        while true {
            switch await mailbox.next() {
            case .activated:
                let route = ActiveRoute(session: session, record: record, device: target, owner: owner)
                routes[session.id] = route
                record.cancelIdleTimer(loop)
                logger.info("route active: \(target.displayName) through \(record.id) (\(session))")
                return route.json
            case .activationFailed(let error), .aborted(let error):
                throw error
            case .pairingRequested(let reason, let method):
                let request = PairingRequest(deviceName: target.displayName, protocolName: record.manifest.displayName, reason: reason, method: method)
                let code = await pairing(request)
                _ = try await call(record, DriverMethod.pair, ["device": target.json, "session": .string(session.id),
                                                               "code": code.map { .string($0) } ?? .null])
            case .started, .sessionFailed:
                continue
            }
        }
    }

    public func deactivate(_ device: String) async throws {
        let route = try activeRoute(device)
        routes[route.session.id] = nil
        if case .running = route.record.phase {
            _ = try? await call(route.record, DriverMethod.deactivate, ["device": route.device.json, "session": .string(route.session.id)])
        }
        logger.info("route inactive: \(route.device.displayName) (\(route.session)), deactivated")
        scheduleIdleExit(route.record)
    }

    /// Starts playing `url` on an active route; returns the route with its first playback state.
    public func startSession(_ device: String, url: String, application: String? = nil) async throws -> JSONValue {
        guard let parsed = URL(string: url), let scheme = parsed.scheme, ["http", "https", "file", "rtsp"].contains(scheme.lowercased()) else {
            throw MediaDeviceError(.sessionFailed, "\"\(url)\" is not a URL a device can play (http, https, rtsp or file)")
        }
        let route = try activeRoute(device)
        guard route.device.capabilities.contains(.urlPlayback) else {
            throw MediaDeviceError(.unsupported, "\(route.device.displayName) cannot play URLs (its capabilities: \(route.device.capabilities.names.joined(separator: ", ")))")
        }
        let mailbox = SessionMailbox(record: route.record)
        mailboxes[route.session.id] = mailbox
        defer { mailboxes[route.session.id] = nil }
        let timeout = loop.schedule(after: Self.outcomeTimeout) {
            mailbox.deliver(.aborted(MediaDeviceError(.timedOut, "driver \(route.record.id) did not start playback within \(Self.outcomeTimeout)")))
        }
        defer { loop.cancelTimer(timeout) }
        var params: JSONObject = ["session": .string(route.session.id), "url": .string(url)]
        if let application { params["application"] = .string(application) }
        _ = try await call(route.record, DriverMethod.startSession, params)
        while true {
            switch await mailbox.next() {
            case .started(let app, let state):
                route.application = app
                route.url = url
                route.playback = state
                return route.json
            case .sessionFailed(let error), .aborted(let error), .activationFailed(let error):
                throw error
            case .activated, .pairingRequested:
                continue
            }
        }
    }

    /// Sets playback properties (isPlaying, position, speed, volume, muted, ...) of the session on `device`.
    public func setPlayback(_ device: String, _ changes: JSONObject) async throws -> JSONValue {
        let route = try activeRoute(device)
        guard route.playback != nil else { throw MediaDeviceError(.sessionFailed, "nothing is playing on \(route.device.displayName); `mediaroute play URL --to \"\(route.device.displayName)\"` first") }
        let state = try await call(route.record, DriverMethod.setPlayback, ["session": .string(route.session.id), "changes": .object(changes)])
        route.playback = state.objectValue
        return route.json
    }

    public func stopSession(_ device: String) async throws {
        let route = try activeRoute(device)
        guard route.playback != nil else { throw MediaDeviceError(.sessionFailed, "nothing is playing on \(route.device.displayName)") }
        _ = try await call(route.record, DriverMethod.stopSession, ["session": .string(route.session.id)])
        route.playback = nil
        route.url = nil
    }

    public enum VolumeAction: Sendable {
        case get, set(Double), change(Int), mute, unmute
    }

    /// Reads or changes the volume of an active device, checking the device's volume control.
    public func volume(_ device: String, _ action: VolumeAction) async throws -> JSONValue {
        let route = try activeRoute(device)
        let target: JSONObject = ["device": route.device.json]
        switch (action, route.device.volumeControl) {
        case (.set, .absolute), (.change, .relative), (.change, .absolute), (.get, _): break
        case (.mute, _), (.unmute, _):
            guard route.device.canMute else { throw MediaDeviceError(.unsupported, "\(route.device.displayName) cannot be muted") }
        case (.set, let control), (.change, let control):
            throw MediaDeviceError(.unsupported, "\(route.device.displayName) has \(control == .none ? "no volume control" : "only relative volume (use +N or -N)")")
        }
        switch action {
        case .get: break
        case .set(let level):
            guard (0...1).contains(level) else { throw MediaDeviceError(.unsupported, "volume \(level) is outside 0...1") }
            _ = try await call(route.record, DriverMethod.setVolume, target.merging(["volume": .double(level)]))
        case .change(let steps): _ = try await call(route.record, DriverMethod.changeVolume, target.merging(["by": .integer(Int64(steps))]))
        case .mute: _ = try await call(route.record, DriverMethod.mute, target)
        case .unmute: _ = try await call(route.record, DriverMethod.unmute, target)
        }
        let state = try await call(route.record, DriverMethod.getVolume, target)
        route.volume = state.objectValue?["volume"]?.doubleValue
        route.muted = state.objectValue?["muted"]?.boolValue
        return route.json
    }

    /// Sends `data` to the application `application` on the device of an active route
    /// (the driver's `receiveData(_:fromApplication:session:)`).
    public func sendData(_ data: [UInt8], toApplication application: String, device: String) async throws {
        let route = try activeRoute(device)
        guard data.count <= Self.maximumDataMessage else {
            throw MediaDeviceError(.unsupported, "a data message of \(data.count) bytes is over the \(Self.maximumDataMessage)-byte limit; split it")
        }
        _ = try await call(route.record, DriverMethod.dataToDevice, ["session": .string(route.session.id), "application": .string(application),
                                                                      "data": .string(Base64.encode(data))])
    }

    /// The largest data-channel message, in bytes (base64 on the wire stays far under the frame limit).
    public static let maximumDataMessage = 1 << 20

    public func activeRoutes() -> [JSONValue] { routes.values.sorted { $0.session.id < $1.session.id }.map(\.json) }

    /// Ends every route of a driver that died or stopped, and fails whatever waited on it.
    func dropRoutes(of record: DriverRecord, reason: String) {
        for route in routes.values where route.record === record {
            routes[route.session.id] = nil
            logger.log(level: isShuttingDown ? .notice : .error, "route inactive: \(route.device.displayName) (\(route.session)): \(reason)")
            recentEvents.append("\(route.device.displayName) deactivated: \(reason)")
            if recentEvents.count > 20 { recentEvents.removeFirst() }
        }
        for mailbox in mailboxes.values where mailbox.record === record {
            mailbox.deliver(.aborted(MediaDeviceError(.driverFailed, "driver \(record.id) \(reason)")))
        }
    }

    /// Routes owned by a connection that went away are deactivated.
    func dropRoutes(ownedBy owner: ObjectIdentifier) async {
        for route in routes.values where route.owner == owner {
            try? await deactivate(route.session.id)
        }
    }
}

extension JSONObject {
    func merging(_ other: JSONObject) -> JSONObject {
        var result = self
        for member in other.members { result[member.key] = member.value }
        return result
    }
}
