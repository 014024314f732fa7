import Foundation
import MediaRouteIPC
import MediaRouteWire
import Observation

/// The extension's sessions, by the supervisor's key: made by `session(_:)`, updated, commanded and
/// watched (Observation) so that what each shows reaches the supervisor when it changes.
@MainActor
final class ExtensionHost<Extension: RemoteMediaSessionExtension> {
    private struct Held {
        let session: Extension.Session
        /// Tells this session from a later one made for the same key.
        let generation: Int
        var shown: RemoteSessionState
    }

    private let remoteExtension: Extension
    private var sessions: [String: Held] = [:]
    private var generations = 0
    var connection: Connection?

    init(_ remoteExtension: Extension) { self.remoteExtension = remoteExtension }

    nonisolated func handlers() -> RPCHandlers {
        var handlers = RPCHandlers()
        /// Runs `body` on the main actor with the host; device errors keep their codes.
        func on<Request: WireRequest>(_ type: Request.Type, _ body: @escaping @MainActor (ExtensionHost, Request) async throws -> Request.Result) {
            handlers.on(type) { [self] request, _ in
                do { return try await body(self, request) } catch let error as MediaDeviceError { throw error.rpcError }
            }
        }
        on(ToExtension.Session.self) { host, request in .init(state: try await host.make(request)) }
        on(ToExtension.Update.self) { host, request in
            try host.held(request.session).session.update(try Self.decode(request.attributes))
            return NoResult()
        }
        on(ToExtension.End.self) { host, request in
            host.end(request.session)
            return NoResult()
        }
        on(ToExtension.Command.self) { host, request in
            try await host.perform(request)
            return NoResult()
        }
        on(ToExtension.Artwork.self) { host, request in try await host.picture(request) }
        on(ToDriver.Ping.self) { _, _ in .init() }
        return handlers
    }

    // MARK: Requests

    private func make(_ request: ToExtension.Session) async throws -> RemoteSessionState {
        let attributes: Extension.Attributes = try Self.decode(request.attributes)
        guard let token = Data(hex: request.pushToken) else { throw RPCError.invalidParams("remote.session: \"pushToken\" must be hex") }
        // A second request for the same key replaces the first's session (the supervisor makes it
        // again after a doubt), and the token is known from the start: `session(_:)` may read it.
        end(request.session)
        ExtensionRuntime.began(attributes.id, token: token)
        let session: Extension.Session
        do {
            session = try await remoteExtension.session(attributes)
        } catch {
            ExtensionRuntime.ended(attributes.id)
            throw MediaDeviceError(.sessionFailed, "the extension could not make the session \"\(attributes.id)\": \(error)")
        }
        let shown = RemoteSessionState(of: session)
        generations += 1
        sessions[request.session] = Held(session: session, generation: generations, shown: shown)
        watch(request.session)
        return shown
    }

    private func end(_ key: String) {
        guard let held = sessions.removeValue(forKey: key) else { return }
        ExtensionRuntime.ended(held.session.id)
    }

    private func held(_ key: String) throws(MediaDeviceError) -> Held {
        guard let held = sessions[key] else { throw MediaDeviceError(.deviceNotFound, "the extension holds no session \(key)") }
        return held
    }

    private func perform(_ request: ToExtension.Command) async throws {
        let session = try held(request.session).session
        do {
            switch request.command {
            case .setVolume, .increaseVolume, .decreaseVolume:
                try await changeVolume(request, of: session)
            default:
                guard let kind = request.command.needs, let command = session.commands.first(where: { $0.name == kind }) else {
                    throw MediaDeviceError(.unsupported, "the session \"\(session.id)\" has no \(request.command.rawValue) command")
                }
                guard command.isEnabled else { throw MediaDeviceError(.unsupported, "the session \"\(session.id)\" has \(kind.rawValue) disabled now") }
                switch command.action {
                case .plain(let action): try await action()
                case .position(let action):
                    guard let position = request.position, position.isFinite, position >= 0 else {
                        throw RPCError.invalidParams("remote.command: seekToPosition needs a \"position\" in seconds, 0 or more")
                    }
                    try await action(position)
                }
            }
        } catch let error as MediaDeviceError {
            throw error
        } catch let error as RPCError {
            throw error
        } catch {
            throw MediaDeviceError(.sessionFailed, "\(request.command.rawValue) on the session \"\(session.id)\" failed: \(error)")
        }
    }

    private func changeVolume(_ request: ToExtension.Command, of session: Extension.Session) async throws {
        let devices = session.devices.filter { request.device == nil || $0.id == request.device }
        let volumes = devices.flatMap { device in device.capabilities.map { (device, $0.volume) } }
        switch request.command {
        case .setVolume:
            guard let level = request.volume, (0...1).contains(level) else { throw RPCError.invalidParams("remote.command: setVolume needs a \"volume\" from 0 to 1") }
            guard let (_, volume) = volumes.first(where: { if case .absolute = $0.1 { true } else { false } }), case .absolute(_, let onChange) = volume else {
                throw MediaDeviceError(.unsupported, "no device of the session \"\(session.id)\"\(request.device.map { " named \($0)" } ?? "") has an absolute volume")
            }
            try await onChange(Float(level))
        default:
            guard let (_, volume) = volumes.first else {
                throw MediaDeviceError(.unsupported, "no device of the session \"\(session.id)\"\(request.device.map { " named \($0)" } ?? "") has a volume")
            }
            let up = request.command == .increaseVolume
            switch volume {
            case .relative(let onIncrement, let onDecrement): try await (up ? onIncrement : onDecrement)()
            case .absolute(let level, let onChange): try await onChange(min(max(level + (up ? 0.0625 : -0.0625), 0), 1))
            }
        }
    }

    private func picture(_ request: ToExtension.Artwork) async throws -> ToExtension.Artwork.Picture {
        let session = try held(request.session).session
        guard let artwork = session.content?.artwork, artwork.id == request.artwork else {
            throw MediaDeviceError(.deviceNotFound, "the session \"\(session.id)\" shows no artwork \"\(request.artwork)\" now")
        }
        let size = CGSize(width: max(1, min(request.width, 4096)), height: max(1, min(request.height, 4096)))
        return .init(data: Base64Payload(try await artwork.provider(size).data))
    }

    // MARK: Watching what a session shows

    /// Reads what the session shows under observation; the first change of any of it sends the
    /// new state (after the change is made: the read waits for the main actor) and watches again.
    private func watch(_ key: String) {
        guard let held = sessions[key] else { return }
        let session = held.session, generation = held.generation
        let shown = withObservationTracking {
            RemoteSessionState(of: session)
        } onChange: { [weak self] in
            Task { @MainActor in self?.changed(key, generation) }
        }
        sessions[key]?.shown = shown
    }

    private func changed(_ key: String, _ generation: Int) {
        guard let held = sessions[key], held.generation == generation else { return }
        let before = held.shown
        watch(key)
        guard let now = sessions[key]?.shown, now != before else { return }
        connection?.post(FromExtension.State(session: key, state: now))
    }

    // MARK: Attributes

    /// Attributes from JSON as a push carries them (dates as ISO 8601 text).
    static func decode<Attributes: Decodable>(_ value: JSONValue) throws(MediaDeviceError) -> Attributes {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        do {
            return try decoder.decode(Attributes.self, from: Data(JSONWriter.encode(value)))
        } catch {
            throw MediaDeviceError(.sessionFailed, "the attributes do not decode as \(Attributes.self): \(AttributesCoding.sentence(error))")
        }
    }
}
