import Foundation
import MediaDevice
import MediaRouteIPC
import ReferenceProtocol

/// One activation's control connection to a receiver (PROTOCOL.md §2-§4): TCP and hello, the
/// token or pairing, commands in the order they were given, and the receiver's events in the order
/// it sent them. A connection that drops is made again (with the token) for a few seconds before
/// the receiver counts as gone.
@MainActor
final class ReceiverLink {
    enum Event {
        case state(session: String, ReceiverPlaybackState)
        case ended(session: String, ReceiverPlaybackState, error: String?)
        case volume(level: Double, muted: Bool)
        case data(application: String, session: String?, Data)
        /// A video stream lost data and needs a keyframe.
        case keyframeRequest(stream: String)
        /// The connection came back after dropping; sessions on the receiver are paused (PROTOCOL.md §2).
        case restored
        /// The receiver cannot be reached any more.
        case lost(String)
    }

    let device: MediaOutputDevice
    let announcement: ReceiverAnnouncement
    /// The receiver's address, where its streams' UDP ports are too.
    let host: String
    private let port: UInt16
    private let credentials: ControllerCredentials
    private let onEvent: (Event) -> Void
    private var connection: Connection?
    private var closedOnPurpose = false
    /// A reconnection loop is running: drops of its own attempts are its business.
    private var reconnecting = false
    private(set) var volume = 0.5
    private(set) var muted = false
    private let commands: AsyncStream<(String, JSONObject)>.Continuation
    private let events: AsyncStream<(String, JSONObject)>.Continuation

    static let connectTimeout: Duration = .seconds(3)
    /// Pauses between attempts to get a dropped connection back: about four seconds in all.
    static let reconnectDelays: [Duration] = [.milliseconds(100), .milliseconds(300), .milliseconds(600), .seconds(1), .seconds(2)]

    init(device: MediaOutputDevice, announcement: ReceiverAnnouncement, endpoint: MediaOutputDevice.NetworkEndpoint,
         credentials: ControllerCredentials, onEvent: @escaping (Event) -> Void) {
        self.device = device
        self.announcement = announcement
        host = endpoint.host
        port = endpoint.port
        self.credentials = credentials
        self.onEvent = onEvent
        let (commandStream, commands) = AsyncStream<(String, JSONObject)>.makeStream()
        let (eventStream, events) = AsyncStream<(String, JSONObject)>.makeStream()
        self.commands = commands
        self.events = events
        Task { @MainActor [weak self] in
            for await (method, params) in commandStream {
                guard let self else { return }
                do { _ = try await self.request(method, params) } catch {
                    FileHandle.standardError.write(Data("\(self.device.displayName): \(method) failed: \(error)\n".utf8))
                }
            }
        }
        Task { @MainActor [weak self] in
            for await (method, params) in eventStream { self?.received(method, params) }
        }
    }

    // MARK: Connecting and authorizing

    /// Connects and says hello, then presents the token if there is one. True when the receiver
    /// lets this controller in already (a token it knows, or no pairing at all).
    func open() async throws(MediaDeviceError) -> Bool {
        try await connect()
        if announcement.authorization == .none { return true }
        guard let token = credentials.token(for: device.id) else { return false }
        do {
            _ = try await request(ReferenceProtocol.Method.authToken, ["token": .string(token)])
            return true
        } catch where error.code == .authorizationFailed {
            credentials.remember(nil, for: device.id)  // the receiver forgot us: pair again
            return false
        }  // a timeout or a drop says nothing about the token: keep it
    }

    /// Asks the receiver to show a code (or to expect its password); returns what to ask the person for.
    func beginPairing() async throws(MediaDeviceError) -> MediaOutputDevice.AuthorizationMethod {
        let answer = try await request(ReferenceProtocol.Method.pairBegin, [:])
        return answer.objectValue?["authorization"].flatMap { try? WireDecoder.decode(MediaOutputDevice.AuthorizationMethod.self, from: $0) }
            ?? announcement.authorization.method
    }

    /// Gives the receiver the person's code; on success the token is kept for next time.
    func finishPairing(_ code: String) async throws(MediaDeviceError) {
        let answer = try await request(ReferenceProtocol.Method.pairFinish, ["code": .string(code)])
        guard let token = answer.objectValue?["token"]?.stringValue else {
            throw MediaDeviceError(.authorizationFailed, "\(device.displayName) accepted the code but sent no token")
        }
        credentials.remember(token, for: device.id)
    }

    private func connect() async throws(MediaDeviceError) {
        let fd: Int32
        do {
            fd = try await TCPSocket.connect(host: host, port: port, timeout: Self.connectTimeout)
        } catch {
            throw MediaDeviceError(.connectionFailed, "cannot connect to \(device.displayName) at \(host):\(port): \(error.errno.description)")
        }
        var handlers = RPCHandlers()
        for event in [ReferenceProtocol.Event.playbackState, ReferenceProtocol.Event.playbackEnded, ReferenceProtocol.Event.volumeChanged,
                      ReferenceProtocol.Event.appData, ReferenceProtocol.Event.keyframeRequest] {
            handlers.onNotification(event) { [events] in events.yield(($0.method, $0.params)) }
        }
        var settings = ConnectionConfiguration(label: "\(device.displayName) at \(host):\(port)")
        settings.maximumFrameLength = ReferenceProtocol.maximumFrameLength
        settings.defaultRequestTimeout = .seconds(10)
        let hello = Hello(role: .controller, name: "mediarouted on \(ProcessInfo.processInfo.hostName)",
                          identity: ["controllerId": .string(credentials.controllerID)], maximumFrameLength: ReferenceProtocol.maximumFrameLength)
        let connection: Connection
        do {
            connection = try await Connection.open(socket: fd, hello: hello, side: .initiator(acceptingRoles: [.receiver]),
                                                   configuration: settings, handlers: handlers)
        } catch {
            throw MediaDeviceError(.connectionFailed, "\(device.displayName) at \(host):\(port) did not complete the handshake: \(error)")
        }
        // The token is a bearer secret: only the receiver that was announced may see it.
        let answered = await connection.peer?.identity["id"]?.stringValue
        guard answered == announcement.id else {
            await connection.close()
            throw MediaDeviceError(.connectionFailed, "the receiver at \(host):\(port) is \(answered.map { "\"\($0)\"" } ?? "unnamed"), not \(device.displayName) (\"\(announcement.id)\"); its address changed hands")
        }
        self.connection = connection
        Task { @MainActor [weak self] in
            let reason = await connection.waitUntilClosed()
            self?.dropped(connection, reason)
        }
    }

    /// The connection closed without us asking: get it back, or give the receiver up.
    private func dropped(_ dropped: Connection, _ reason: RPCError) {
        guard connection === dropped, !closedOnPurpose, !reconnecting else { return }
        connection = nil
        reconnecting = true
        Task { @MainActor in
            defer { reconnecting = false }
            for delay in Self.reconnectDelays {
                try? await Task.sleep(for: delay)
                if closedOnPurpose { return }
                if let authorized = try? await open(), authorized {
                    onEvent(.restored)
                    return
                }
                if let failed = connection { Task { await failed.close() } }
                connection = nil
            }
            if !closedOnPurpose { onEvent(.lost("\(device.displayName) went away (\(reason.message))")) }
        }
    }

    func close() {
        closedOnPurpose = true
        commands.finish()
        events.finish()
        if let connection { Task { await connection.close() } }
        connection = nil
    }

    // MARK: Talking to the receiver

    /// One request; the receiver's refusals become media-device errors naming the receiver.
    func request(_ method: String, _ params: JSONObject) async throws(MediaDeviceError) -> JSONValue {
        guard let connection else { throw MediaDeviceError(.connectionFailed, "\(device.displayName) is not connected") }
        do {
            return try await connection.request(method, params).result
        } catch let error as RPCError {
            throw Self.deviceError(error, device: device.displayName)
        } catch {
            throw MediaDeviceError(.connectionFailed, "\(device.displayName): \(error)")
        }
    }

    /// A command whose answer nobody waits for (a playback control's setter); commands keep their order.
    func send(_ method: String, _ params: JSONObject) { commands.yield((method, params)) }

    static func deviceError(_ error: RPCError, device: String) -> MediaDeviceError {
        let message = "\(device): \(error.message)"
        guard let protocolError = ReferenceProtocolError(error) else {
            switch error.code {
            case .timedOut: return MediaDeviceError(.timedOut, message)
            default: return MediaDeviceError(.connectionFailed, message)
            }
        }
        switch protocolError.code {
        case .notAuthorized, .wrongCode, .rateLimited, .noPairingInProgress: return MediaDeviceError(.authorizationFailed, message)
        case .mediaFailed, .noSuchSession: return MediaDeviceError(.sessionFailed, message)
        case .noSuchApplication, .unsupported, .badRequest: return MediaDeviceError(.unsupported, message)
        }
    }

    private func received(_ method: String, _ params: JSONObject) {
        switch method {
        case ReferenceProtocol.Event.playbackState:
            if let session = params["session"]?.stringValue, let state = ReceiverPlaybackState(json: params["state"]) { onEvent(.state(session: session, state)) }
        case ReferenceProtocol.Event.playbackEnded:
            if let session = params["session"]?.stringValue, let state = ReceiverPlaybackState(json: params["state"]) {
                onEvent(.ended(session: session, state, error: params["error"]?.objectValue?["message"]?.stringValue))
            }
        case ReferenceProtocol.Event.volumeChanged:
            updateVolume(params)
            onEvent(.volume(level: volume, muted: muted))
        case ReferenceProtocol.Event.keyframeRequest:
            if let stream = params["stream"]?.stringValue { onEvent(.keyframeRequest(stream: stream)) }
        case ReferenceProtocol.Event.appData:
            if let application = params["application"]?.stringValue, let text = params["data"]?.stringValue, let data = Data(base64Encoded: text) {
                onEvent(.data(application: application, session: params["session"]?.stringValue, data))
            }
        default:
            break
        }
    }

    /// Volume commands take effect here at once (the SDK asks `volume(for:)` right after setting
    /// it); the receiver's `volume.changed` then confirms or corrects.
    func setVolume(_ level: Double) {
        volume = min(1, max(0, level))
        send(ReferenceProtocol.Method.volumeSet, ["level": .double(volume)])
    }

    func changeVolume(by steps: Int) {
        volume = ReferenceProtocol.volume(volume, changedBy: steps)
        send(ReferenceProtocol.Method.volumeChange, ["steps": .integer(Int64(steps))])
    }

    func setMuted(_ mute: Bool) {
        muted = mute
        send(ReferenceProtocol.Method.volumeMute, ["muted": .bool(mute)])
    }

    /// Takes a `{"volume", "muted"}` answer or event.
    func updateVolume(_ object: JSONObject?) {
        if let level = object?["volume"]?.doubleValue { volume = level }
        if let mute = object?["muted"]?.boolValue { muted = mute }
    }
}
