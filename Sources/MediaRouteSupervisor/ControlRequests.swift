import Foundation
import MediaDevice
import MediaRouteIPC
import Synchronization

/// The operator's methods (IPC/README.md §11.3), each a typed message. Apps may open pickers and
/// activate devices (a person choosing in the app's own route picker); the rest is the operator's.
enum ControlRequests {
    static func register(in handlers: inout RPCHandlers, client: ControlClient, context: ControlContext) {
        let supervisor = context.supervisor
        func on<Request: WireRequest>(_ type: Request.Type, forApps: Bool = false,
                                      _ body: @escaping @Sendable (Request, IncomingRequest) async throws -> Request.Result) {
            handlers.answer(type) { request, incoming in
                if !forApps, let app = client.app.withLock({ $0 }) {
                    throw RPCError(.roleRejected, "\"\(Request.method)\" is for the operator (role control), not for app \(app.applicationIdentifier); apps use the app.* methods")
                }
                return try await body(request, incoming)
            }
        }

        on(Control.Status.self) { _, _ in
            .init(pid: getpid(), uptimeSeconds: Int((ContinuousClock.now - context.started).components.seconds), socket: context.socketPath,
                  drivers: await supervisor.driverStatuses().map(\.report), routes: await supervisor.activeRoutes(),
                  recentEvents: await supervisor.recentEvents, pushAddress: await supervisor.pushAddress?.description)
        }
        on(Control.ListDrivers.self) { _, _ in .init(drivers: await supervisor.driverStatuses().map(\.report)) }
        on(Control.DriverLog.self) { request, _ in .init(lines: supervisor.driverLog.lines(of: request.protocol)) }
        on(Control.ListRoutes.self) { _, _ in .init(routes: await supervisor.activeRoutes()) }
        on(Control.NowPlaying.self) { _, _ in .init(sessions: await supervisor.nowPlaying()) }
        on(Control.OpenPicker.self, forApps: true) { _, incoming in
            let box = PickerBox()
            // An app's picker lists only the protocols it declared (its MDESupportedProtocols).
            let app = client.app.withLock { $0 }
            @Sendable func visible(_ entries: [PickerEntry]) -> [PickerLine] {
                entries.compactMap { entry in app.map { entry.restricted(to: $0.supportedProtocols) } ?? entry }.map(\.line)
            }
            let (id, entries) = await supervisor.openPicker { entries in
                guard let picker = box.id.withLock({ $0 }) else { return }
                incoming.connection.post(Control.PickerChanged(picker: picker, entries: visible(entries)))
            }
            box.id.withLock { $0 = id }
            client.pickers.withLock { $0.append(id) }
            return .init(picker: id, entries: visible(entries))
        }
        on(Control.ClosePicker.self, forApps: true) { request, _ in
            let owned = client.pickers.withLock { pickers in
                guard let index = pickers.firstIndex(of: request.picker) else { return false }
                pickers.remove(at: index)
                return true
            }
            guard owned else { throw RPCError.invalidParams("picker.close: \"picker\" must be a picker this client opened") }
            await supervisor.closePicker(request.picker)
            return NoResult()
        }
        on(Control.Activate.self, forApps: true) { request, incoming in
            let requester: Requester = client.app.withLock { $0 }.map { .app($0) } ?? .operator
            return try await supervisor.activate(try nonEmpty(request.device, "device"), protocolID: request.protocol, by: requester) { pairing in
                // Pairing prompts go to the client that started the activation; no answer cancels.
                let question = Control.PairingRequest(device: pairing.deviceName, protocolName: pairing.protocolName, reason: pairing.reason,
                                                      authorizationMethod: pairing.method)
                return try? await incoming.connection.call(question, timeout: .seconds(300)).code
            }
        }
        on(Control.Deactivate.self) { request, _ in
            try await supervisor.deactivate(try nonEmpty(request.device, "device"))
            return NoResult()
        }
        on(Control.Prefer.self) { request, _ in
            try await supervisor.setPreferredProtocol(try nonEmpty(request.protocol, "protocol"), forDevice: try nonEmpty(request.device, "device"))
            return NoResult()
        }
        on(Control.Rename.self) { request, _ in
            try await supervisor.rename(try nonEmpty(request.device, "device"), to: request.name)
            return NoResult()
        }
        on(Control.StartSession.self) { request, _ in
            try await supervisor.startSession(try nonEmpty(request.device, "device"), url: try nonEmpty(request.url, "url"), application: request.application)
        }
        on(Control.SetPlayback.self) { request, _ in try await supervisor.setPlayback(try nonEmpty(request.device, "device"), request.changes) }
        on(Control.StopSession.self) { request, _ in
            try await supervisor.stopSession(try nonEmpty(request.device, "device"))
            return NoResult()
        }
        on(Control.Volume.self) { request, _ in
            let action: Supervisor.VolumeAction
            switch request.action ?? .get {
            case .get: action = .get
            case .set:
                guard let level = request.value else { throw RPCError.invalidParams("volume: set needs a \"value\" from 0 to 1") }
                action = .set(level)
            case .change:
                guard let steps = request.value, let whole = Int(exactly: steps) else { throw RPCError.invalidParams("volume: change needs a whole number of steps in \"value\"") }
                action = .change(whole)
            case .mute: action = .mute
            case .unmute: action = .unmute
            }
            return try await supervisor.volume(try nonEmpty(request.device, "device"), action)
        }
        on(Control.RestartDriver.self) { request, _ in
            try await supervisor.restartDriver(try nonEmpty(request.protocol, "protocol"))
            return NoResult()
        }
        on(Control.EnableDriver.self) { request, _ in
            try await supervisor.enableDriver(try nonEmpty(request.protocol, "protocol"))
            return NoResult()
        }
        on(Control.DisableDriver.self) { request, _ in
            try await supervisor.disableDriver(try nonEmpty(request.protocol, "protocol"))
            return NoResult()
        }
        on(Control.PushCredential.self) { request, _ in
            let credential = try await supervisor.pushCredential(for: request.application, rotate: request.rotate ?? false)
            return .init(application: request.application, credential: credential, pushToStartToken: try await supervisor.pushToStartToken(of: request.application))
        }
    }
}

/// The value, unless it is empty: a name, URL or protocol is never empty.
func nonEmpty(_ value: String, _ member: String) throws(RPCError) -> String {
    guard !value.isEmpty else { throw .invalidParams("\"\(member)\" must be a non-empty string") }
    return value
}

/// The picker id, known only after `openPicker` returns, for the change callback.
private final class PickerBox: Sendable {
    let id = Mutex<Int?>(nil)
}
