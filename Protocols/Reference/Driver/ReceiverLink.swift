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
    /// Volume commands sent and not yet answered: while any is, the receiver's `volume.changed`
    /// events may describe the level before it, and are not taken (the last answer is).
    private var volumeCommandsInFlight = 0
    private let commands: AsyncStream<(method: String, params: JSONObject, isVolume: Bool)>.Continuation
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
        let (commandStream, commands) = AsyncStream<(method: String, params: JSONObject, isVolume: Bool)>.makeStream()
        let (eventStream, events) = AsyncStream<(String, JSONObject)>.makeStream()
        self.commands = commands
        self.events = events
        Task { @MainActor [weak self] in
            for await (method, params, isVolume) in commandStream {
                guard let self else { return }
                var answer: JSONValue?
                do { answer = try await self.request(method: method, params) } catch {
                    FileHandle.standardError.write(Data("\(self.device.displayName): \(method) failed: \(error)\n".utf8))
                }
                if isVolume { self.volumeAnswered(answer) }
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
            _ = try await request(ReferenceRequest.AuthToken(token: token))
            return true
        } catch where error.code == .authorizationFailed {
            credentials.remember(nil, for: device.id)  // the receiver forgot us: pair again
            return false
        }  // a timeout or a drop says nothing about the token: keep it
    }

    /// Asks the receiver to show a code (or to expect its password); returns what to ask the person for.
    func beginPairing() async throws(MediaDeviceError) -> MediaOutputDevice.AuthorizationMethod {
        try await request(ReferenceRequest.PairBegin()).authorization
    }

    /// Gives the receiver the person's code; on success the token is kept for next time.
    func finishPairing(_ code: String) async throws(MediaDeviceError) {
        credentials.remember(try await request(ReferenceRequest.PairFinish(code: code)).token, for: device.id)
    }

    private func connect() async throws(MediaDeviceError) {
        let fd: Int32
        do {
            fd = try await TCPSocket.connect(host: host, port: port, timeout: Self.connectTimeout)
        } catch {
            throw MediaDeviceError(.connectionFailed, "cannot connect to \(device.displayName) at \(host):\(port): \(error.errno.description)")
        }
        var handlers = RPCHandlers()
        for event in [ReceiverEvent.PlaybackState.method, ReceiverEvent.PlaybackEnded.method, ReceiverEvent.VolumeChanged.method,
                      ReceiverEvent.AppData.method, ReceiverEvent.KeyframeRequest.method] {
            handlers.onNotification(event) { [events] in events.yield(($0.method, $0.params)) }
        }
        var settings = ConnectionConfiguration(label: "\(device.displayName) at \(host):\(port)")
        settings.maximumFrameLength = ReferenceProtocol.maximumFrameLength
        settings.defaultRequestTimeout = .seconds(10)
        let hello = Hello(role: .controller, name: "mediarouted on \(ProcessInfo.processInfo.hostName)",
                          identity: WireEncoder.encode(ControllerIdentity(controllerId: credentials.controllerID)).objectValue ?? [:],
                          maximumFrameLength: ReferenceProtocol.maximumFrameLength)
        let connection: Connection
        do {
            connection = try await Connection.open(socket: fd, hello: hello, side: .initiator(acceptingRoles: [.receiver]),
                                                   configuration: settings, handlers: handlers)
        } catch {
            throw MediaDeviceError(.connectionFailed, "\(device.displayName) at \(host):\(port) did not complete the handshake: \(error)")
        }
        // The token is a bearer secret: only the receiver that was announced may see it.
        let answered = await connection.peer.flatMap { try? WireDecoder.decode(ReceiverIdentity.self, from: .object($0.identity)).id }
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

    /// One request; the receiver's refusals (and answers that are not what PROTOCOL.md says)
    /// become media-device errors naming the receiver.
    @discardableResult
    func request<Request: WireRequest>(_ request: Request) async throws(MediaDeviceError) -> Request.Result {
        let answer = try await self.request(method: Request.method, request.params)
        do { return try Request.decodeResult(answer) } catch { throw Self.deviceError(error, device: device.displayName) }
    }

    private func request(method: String, _ params: JSONObject) async throws(MediaDeviceError) -> JSONValue {
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
    func send<Request: WireRequest>(_ request: Request) { commands.yield((Request.method, request.params, false)) }

    /// A volume command: its answer is the receiver's level after it.
    private func sendVolume<Request: WireRequest>(_ request: Request) where Request.Result == ReferenceRequest.Volume {
        volumeCommandsInFlight += 1
        commands.yield((Request.method, request.params, true))
    }

    /// The last volume command in flight answered: its level is the receiver's.
    private func volumeAnswered(_ answer: JSONValue?) {
        volumeCommandsInFlight -= 1
        guard volumeCommandsInFlight == 0, let answer, let reading = try? ReferenceRequest.VolumeSet.decodeResult(answer) else { return }
        guard reading.volume != volume || reading.muted != muted else { return }
        updateVolume(reading)
        onEvent(.volume(level: volume, muted: muted))
    }

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

    /// A receiver's notification, read into its type. One that does not decode is the receiver's
    /// mistake: said on stderr (the supervisor's log), with the method and the member.
    private func received(_ method: String, _ params: JSONObject) {
        do throws(RPCError) {
            switch method {
            case ReceiverEvent.PlaybackState.method:
                let event = try ReceiverEvent.PlaybackState.decode(params)
                onEvent(.state(session: event.session, event.state))
            case ReceiverEvent.PlaybackEnded.method:
                let event = try ReceiverEvent.PlaybackEnded.decode(params)
                onEvent(.ended(session: event.session, event.state, error: event.error?.message))
            case ReceiverEvent.VolumeChanged.method:
                let event = try ReceiverEvent.VolumeChanged.decode(params)
                guard volumeCommandsInFlight == 0 else { return }
                updateVolume(ReferenceRequest.Volume(volume: event.volume, muted: event.muted))
                onEvent(.volume(level: volume, muted: muted))
            case ReceiverEvent.KeyframeRequest.method:
                onEvent(.keyframeRequest(stream: try ReceiverEvent.KeyframeRequest.decode(params).stream))
            case ReceiverEvent.AppData.method:
                let event = try ReceiverEvent.AppData.decode(params)
                onEvent(.data(application: event.application, session: event.session, event.data.bytes))
            default:
                break
            }
        } catch {
            FileHandle.standardError.write(Data("\(device.displayName) sent a notification that does not decode: \(error.message)\n".utf8))
        }
    }

    /// Volume commands take effect here at once (the SDK asks `volume(for:)` right after setting
    /// it); the receiver's answer to the last of them then confirms or corrects.
    func setVolume(_ level: Double) {
        volume = min(1, max(0, level))
        sendVolume(ReferenceRequest.VolumeSet(level: volume))
    }

    func changeVolume(by steps: Int) {
        volume = ReferenceProtocol.volume(volume, changedBy: steps)
        sendVolume(ReferenceRequest.VolumeChange(steps: steps))
    }

    func setMuted(_ mute: Bool) {
        muted = mute
        sendVolume(ReferenceRequest.VolumeMute(muted: mute))
    }

    /// Takes the receiver's volume, from an answer or an event.
    func updateVolume(_ reading: ReferenceRequest.Volume) {
        volume = reading.volume
        muted = reading.muted
    }
}
