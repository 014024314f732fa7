import Foundation
import MediaDevice
import MediaRouteIPC
import Synchronization

/// The operator's methods (IPC/README.md §11.3). Apps may open pickers and activate devices (a
/// person choosing in the app's own route picker); the rest belongs to the operator.
enum ControlRequests {
    static let methodsForApps: Set<String> = ["picker.open", "picker.close", "device.activate"]

    static func register(in handlers: inout RPCHandlers, client: ControlClient, context: ControlContext) {
        let supervisor = context.supervisor
        func on(_ method: String, _ body: @escaping @Sendable (IncomingRequest) async throws -> JSONValue) {
            let forApps = methodsForApps.contains(method)
            handlers.on(method) { request in
                if !forApps, let app = client.app.withLock({ $0 }) {
                    throw RPCError(.roleRejected, "\"\(method)\" is for the operator (role control), not for app \(app.applicationIdentifier); apps use the app.* methods")
                }
                return try await body(request)
            }
        }

        on("status") { _ in
            let drivers = await supervisor.driverStatuses()
            return ["pid": .integer(Int64(getpid())), "uptimeSeconds": .integer((ContinuousClock.now - context.started).milliseconds / 1000),
                    "socket": .string(context.socketPath), "drivers": .array(drivers.map(\.json)),
                    "routes": .array(await supervisor.activeRoutes()), "recentEvents": .array(await supervisor.recentEvents.map { .string($0) })]
        }
        on("drivers.list") { _ in ["drivers": .array(await supervisor.driverStatuses().map(\.json))] }
        on("picker.open") { request in
            let box = PickerBox()
            // An app's picker lists only the protocols it declared (its MDESupportedProtocols).
            let app = client.app.withLock { $0 }
            @Sendable func visible(_ entries: [PickerEntry]) -> JSONValue {
                .array(entries.compactMap { entry in app.map { entry.restricted(to: $0.supportedProtocols) } ?? entry }.map(\.json))
            }
            let (id, entries) = await supervisor.openPicker { entries in
                guard let picker = box.id.withLock({ $0 }) else { return }
                request.connection.post("picker.changed", ["picker": .integer(Int64(picker)), "entries": visible(entries)])
            }
            box.id.withLock { $0 = id }
            client.pickers.withLock { $0.append(id) }
            return ["picker": .integer(Int64(id)), "entries": visible(entries)]
        }
        on("picker.close") { request in
            let id = request.params["picker"]?.integerValue.map { Int($0) }
            let owned = client.pickers.withLock { pickers in
                guard let id, let index = pickers.firstIndex(of: id) else { return false }
                pickers.remove(at: index)
                return true
            }
            guard owned, let id else { throw RPCError.invalidParams("\"picker\" must be a picker this client opened") }
            await supervisor.closePicker(id)
            return .null
        }
        on("driver.restart") { request in
            try await supervisor.restartDriver(try request.params.requiredString("protocol"))
            return .null
        }
        on("driver.enable") { request in
            try await supervisor.enableDriver(try request.params.requiredString("protocol"))
            return .null
        }
        on("driver.disable") { request in
            try await supervisor.disableDriver(try request.params.requiredString("protocol"))
            return .null
        }
        on("device.prefer") { request in
            let params = request.params
            try await supervisor.setPreferredProtocol(try params.requiredString("protocol"), forDevice: try params.requiredString("device"))
            return .null
        }
        on("device.activate") { request in
            let params = request.params
            let app = client.app.withLock { $0 }
            let device = try params.requiredString("device")
            if let app, let wanted = params["protocol"]?.stringValue, !app.mayUse(protocol: wanted) {
                throw MediaDeviceError(.unsupported, "\(app.applicationIdentifier) did not declare \(wanted) among its supported protocols")
            }
            return try await supervisor.activate(device, protocolID: params["protocol"]?.stringValue, app: app) { pairing in
                // Pairing prompts go to the client that started the activation; no answer cancels.
                let question: JSONObject = ["device": .string(pairing.deviceName), "protocolName": .string(pairing.protocolName),
                                            "reason": .string(pairing.reason), "authorizationMethod": pairing.method.json]
                return try? await request.connection.request("pairing.request", question, timeout: .seconds(300)).result.objectValue?["code"]?.stringValue
            }
        }
        on("device.deactivate") { request in
            try await supervisor.deactivate(try request.params.requiredString("device"))
            return .null
        }
        on("session.start") { request in
            let params = request.params
            return try await supervisor.startSession(try params.requiredString("device"), url: try params.requiredString("url"), application: params["application"]?.stringValue)
        }
        on("playback.set") { request in
            let params = request.params
            return try await supervisor.setPlayback(try params.requiredString("device"), params["changes"]?.objectValue ?? [:])
        }
        on("session.stop") { request in
            try await supervisor.stopSession(try request.params.requiredString("device"))
            return .null
        }
        on("volume") { request in
            let params = request.params
            let device = try params.requiredString("device")
            let action: Supervisor.VolumeAction
            switch params["action"]?.stringValue {
            case "get"?, nil: action = .get
            case "set"?:
                guard let level = params["value"]?.doubleValue else { throw RPCError.invalidParams("volume set needs a \"value\" from 0 to 1") }
                action = .set(level)
            case "change"?:
                guard let steps = params["value"]?.integerValue else { throw RPCError.invalidParams("volume change needs an integer \"value\"") }
                action = .change(Int(steps))
            case "mute"?: action = .mute
            case "unmute"?: action = .unmute
            case let other?: throw RPCError.invalidParams("unknown volume action \"\(other)\"; use get, set, change, mute or unmute")
            }
            return try await supervisor.volume(device, action)
        }
        on("routes.list") { _ in ["routes": .array(await supervisor.activeRoutes())] }
    }
}

/// The picker id, known only after `openPicker` returns, for the change callback.
private final class PickerBox: Sendable {
    let id = Mutex<Int?>(nil)
}

extension PickerEntry {
    var json: JSONValue {
        ["name": .string(name), "preferredProtocol": .string(preferredProtocol),
         "routes": .array(routes.map { ["protocol": .string($0.protocolID), "protocolName": .string($0.protocolName), "device": $0.device.json] })]
    }
}

extension DriverStatus {
    var json: JSONValue {
        var object: JSONObject = ["protocol": .string(protocolID), "displayName": .string(displayName), "manifest": .string(manifestPath),
                                  "state": .string(state.description), "restarts": .integer(Int64(restarts)), "devices": .integer(Int64(deviceCount))]
        if let pid { object["pid"] = .integer(Int64(pid)) }
        if let uptime { object["uptimeSeconds"] = .integer(uptime.milliseconds / 1000) }
        if let lastExit { object["lastExit"] = .string(lastExit) }
        return .object(object)
    }
}
