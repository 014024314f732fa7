import AvahiDiscovery
import Foundation
import MediaCodecs
import MediaDevice
import MediaRouteIPC
import ReferenceProtocol
import SoundOutput
import Synchronization

/// What the receiver is and how it behaves.
struct ReceiverConfiguration: Sendable {
    var name: String
    var announcement: ReceiverAnnouncement
    var password: String?
    var host = "0.0.0.0"
    var port: UInt16 = 0
    var stateDirectory: String
    var ffmpeg: String
    var ffprobe: String
    /// Where real-time streams are recorded (`STREAM.wav`, `STREAM.h264`), if anywhere.
    var recordDirectory: String?
    /// Print when decoded audio starts after silence (for latency measurements).
    var reportOnsets = false
    /// Drop this RTP packet (1-based) of every video stream, as a lossy network would: for tests of
    /// keyframe requests.
    var dropVideoPacket: Int?
    /// How long and how many connections may stay open without pairing.
    var unpaired = UnpairedLimits()
    /// Where sound goes (resolved: never `auto`), and the ALSA device for `alsa`.
    var audioOutput = AudioOutputChoice.null
    var alsaDevice = "default"
    /// Where real-time video shows (resolved: never `auto`), and the ffplay that draws its windows.
    var videoOutput = VideoOutputChoice.none
    var ffplay: String?
}

/// A stream is named by its controller: two controllers may both call theirs "r1".
struct StreamKey: Hashable {
    let controller: String
    let name: String
}

/// One controller's connection, and whether it may control the receiver yet.
final class ControllerLink: @unchecked Sendable {
    let peer: String
    /// The controller's address without the port: where its RTP must come from.
    let host: String
    /// From the controller's hello (set during the handshake, on the loop).
    let identity = Mutex<(id: String, name: String)?>(nil)
    /// Set on the loop: during the handshake (no pairing needed), or by a token or pairing.
    private let isAuthorized = Atomic<Bool>(false)
    /// When the receiver accepted it: unpaired connections live a bounded time from then.
    let accepted = ContinuousClock.now
    // On the receiver's executor:
    var connection: Connection?
    /// The last request it made: unpaired connections that make none are closed.
    var lastRequest = ContinuousClock.now
    var authorized: Bool {
        get { isAuthorized.load(ordering: .relaxed) }
        set { isAuthorized.store(newValue, ordering: .relaxed) }
    }

    init(peer: String, host: String) {
        self.peer = peer
        self.host = host
    }
    var controllerID: String { identity.withLock { $0?.id } ?? "?" }
    var name: String { identity.withLock { $0?.name } ?? peer }
}

/// The reference receiver: announces itself over Avahi, accepts controllers over TCP, pairs them,
/// plays what they ask at real-time pace, keeps volume, and runs applications for the data channel
/// (PROTOCOL.md). An actor on the IPC event loop, like every connection it serves.
actor Receiver {
    nonisolated let loop: EventLoop
    nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
    let configuration: ReceiverConfiguration
    private let pairing: PairingBook
    private let player: MediaPlayer
    private let applications = ReceiverApplications()
    private var links: [ObjectIdentifier: ControllerLink] = [:]
    /// The links not authorized yet, bounded in time and number.
    private var unpaired: UnpairedConnections
    /// The timer that closes the next unpaired link whose time is up, and when it fires.
    private var unpairedSweep: (timer: EventLoop.TimerHandle, at: ContinuousClock.Instant)?
    private var volume = 0.5
    private var muted = false
    /// The session playing now: whose it is, its name, and the application running it.
    private var current: (controller: String, session: String)?
    private var graceTimer: EventLoop.TimerHandle?
    private var cadence: EventLoop.TimerHandle?
    /// Open streams by controller and the controller's name for each.
    private var streams: [StreamKey: ReceiverStream] = [:]
    /// Sound players of streams that ended whose threads are still closing their devices.
    private var closingPlayers: [RealtimeAudioPlayer] = []
    private var listener: TCPListener?
    private var avahi: AvahiConnection?
    private var publication: ServicePublication?

    init(configuration: ReceiverConfiguration, loop: EventLoop = .shared) throws {
        self.configuration = configuration
        self.loop = loop
        pairing = try PairingBook(authorization: configuration.announcement.authorization, password: configuration.password,
                                  stateDirectory: configuration.stateDirectory)
        player = MediaPlayer(ffmpeg: configuration.ffmpeg, output: configuration.audioOutput, alsaDevice: configuration.alsaDevice, loop: loop)
        unpaired = UnpairedConnections(limits: configuration.unpaired)
        player.gain = Float(volume)
    }

    /// Listens, then announces; the announcement waits for Avahi if Avahi is not there yet.
    func start() async throws {
        player.onChange = { [unowned self] in self.assumeIsolated { $0.playerChanged() } }
        listener = try await TCPListener(host: configuration.host, port: configuration.port, loop: loop) { [self] fd, peer in
            Task { await self.serve(fd, peer: peer) }
        }
        let port = listener!.port
        say("listening on \(configuration.host):\(port)")
        let avahi = try AvahiConnection { state in
            switch state {
            case .running: say("Avahi is running")
            case .unavailable(let why): say("waiting for Avahi: \(why)")
            }
        }
        self.avahi = avahi
        publication = ServicePublication(name: configuration.name, type: ReferenceProtocol.serviceType, port: port,
                                         txt: configuration.announcement.txt, on: avahi) { event in
            switch event {
            case .established(let name): say("announced as \"\(name)\" (\(ReferenceProtocol.serviceType), port \(port))")
            case .failed(let why): say("cannot announce: \(why)")
            }
        }
    }

    /// Withdraws the announcement, stops playback, and closes every connection.
    func shutdown() async {
        publication?.cancel()
        avahi?.close()
        listener?.close()
        player.stop()
        for key in streams.keys { stopStream(key) }
        for link in links.values { await link.connection?.close() }
        // What the devices hold plays out, and they close, before the process ends.
        for player in closingPlayers { await player.ended() }
        say("stopped")
    }

    // MARK: Connections

    private func serve(_ fd: Int32, peer: String) async {
        let link = ControllerLink(peer: peer, host: TCPSocket.address(of: fd, peer: true)?.host ?? "?")
        let authorization = pairing.authorization
        var settings = ConnectionConfiguration(label: "controller at \(peer)")
        settings.maximumFrameLength = ReferenceProtocol.maximumFrameLength
        settings.onProtocolViolation = { say("controller at \(peer) broke the protocol: \($0.message)") }
        settings.acceptHello = { hello throws(RPCError) in
            guard let id = try? WireDecoder.decode(ControllerIdentity.self, from: .object(hello.identity)).controllerId, ReceiverAnnouncement.isIdentifier(id) else {
                throw RPCError.invalidParams("a controller's hello needs \"identity.controllerId\", 1-64 of A-Z a-z 0-9 . _ -")
            }
            link.identity.withLock { $0 = (id, hello.name) }
            // Before any request can arrive: a receiver without pairing lets everyone in.
            if authorization == .none { link.authorized = true }
        }
        let hello = Hello(role: .receiver, name: configuration.name,
                          identity: WireEncoder.encode(ReceiverIdentity(id: configuration.announcement.id, model: configuration.announcement.model)).objectValue ?? [:],
                          maximumFrameLength: ReferenceProtocol.maximumFrameLength)
        let connection: Connection
        do {
            connection = try await Connection.open(socket: fd, hello: hello, side: .acceptor(acceptingRoles: [.controller]), loop: loop,
                                                   configuration: settings, handlers: handlers(link))
        } catch {
            say("controller at \(peer) did not connect: \(error)")
            return
        }
        link.connection = connection
        links[ObjectIdentifier(link)] = link
        say("\(link.name) connected from \(peer)")
        if link.authorized {
            authorize(link)
        } else {
            for (victim, why) in unpaired.admit(link) { closeUnpaired(victim, why) }
            sweepUnpaired()
        }
        let reason = await connection.waitUntilClosed()
        links[ObjectIdentifier(link)] = nil
        unpaired.remove(link)
        pairing.connectionClosed(ObjectIdentifier(link))
        say("\(link.name) disconnected (\(reason.message))")
        controllerLeft(link)
    }

    /// Closes a connection that has not paired, saying which and why.
    private func closeUnpaired(_ link: ControllerLink, _ why: String) {
        say("closed the unpaired connection of \(link.name) from \(link.peer): \(why)")
        guard let connection = link.connection else { return }
        Task { await connection.close() }
    }

    /// Closes the unpaired connections whose time is up, and sets a timer for the next one.
    /// Called when one is admitted and after each of their requests (which move their deadlines).
    private func sweepUnpaired() {
        let now = ContinuousClock.now
        let (due, next) = unpaired.overdue(now: now) { pairing.pendingUntil($0) }
        for (link, why) in due {
            unpaired.remove(link)
            closeUnpaired(link, why)
        }
        guard unpairedSweep?.at != next else { return }
        if let unpairedSweep { loop.cancelTimer(unpairedSweep.timer) }
        unpairedSweep = next.map { next in
            (loop.schedule(after: next - now) { [unowned self] in
                self.assumeIsolated { receiver in
                    receiver.unpairedSweep = nil
                    receiver.sweepUnpaired()
                }
            }, next)
        }
    }

    private nonisolated func handlers(_ link: ControllerLink) -> RPCHandlers {
        var handlers = RPCHandlers()
        typealias R = ReferenceRequest
        let methods = [R.AuthToken.method, R.PairBegin.method, R.PairFinish.method, R.Status.method, R.Play.method, R.Control.method,
                       R.Stop.method, R.VolumeSet.method, R.VolumeChange.method, R.VolumeMute.method, R.AppSend.method,
                       R.StreamStart.method, R.StreamStop.method]
        for method in methods {
            handlers.onRequest(method) { [self] request in
                do {
                    return RPCReply(try await self.handle(method, request.params, from: link))
                } catch let error as ReferenceProtocolError {
                    throw error.rpcError
                }
            }
        }
        return handlers
    }

    private func authorize(_ link: ControllerLink) {
        link.authorized = true
        unpaired.remove(link)
        // A controller coming back in time finds its session again (paused, as it left it).
        if let current, current.controller == link.controllerID, let graceTimer {
            loop.cancelTimer(graceTimer)
            self.graceTimer = nil
        }
    }

    /// The controller of a playing session went away: pause (nobody may be listening in that room
    /// any more), and keep the session a while for it to come back.
    private func controllerLeft(_ link: ControllerLink) {
        if !links.values.contains(where: { $0.controllerID == link.controllerID }) {
            for key in streams.keys where key.controller == link.controllerID { stopStream(key) }
        }
        guard let current, current.controller == link.controllerID,
              !links.values.contains(where: { $0.authorized && $0.controllerID == link.controllerID }) else { return }
        if player.phase == .playing {
            player.pause()
            say("paused \(current.session): \(link.name) went away")
        }
        if let graceTimer { loop.cancelTimer(graceTimer) }
        graceTimer = loop.schedule(after: .seconds(ReferenceProtocol.sessionGraceSeconds)) { [unowned self] in
            self.assumeIsolated { receiver in
                receiver.graceTimer = nil
                guard receiver.current?.controller == current.controller else { return }
                receiver.player.stop()
                receiver.current = nil
                say("stopped \(current.session): its controller did not come back")
            }
        }
    }

    // MARK: Requests

    private func handle(_ method: String, _ params: JSONObject, from link: ControllerLink) async throws -> JSONValue {
        typealias R = ReferenceRequest
        link.lastRequest = .now
        // An unpaired link's deadline moved (a request, a pairing begun or spent): find the next one.
        let wasUnpaired = !link.authorized
        defer { if wasUnpaired { sweepUnpaired() } }
        switch method {
        case R.AuthToken.method:
            guard pairing.isPaired(link.controllerID, token: try read(R.AuthToken.self, params).token) else {
                throw ReferenceProtocolError(.notAuthorized, "\(configuration.name) does not know that token (it may have forgotten it); pair again")
            }
            authorize(link)
            return answer(R.Done())
        case R.PairBegin.method:
            do {
                let (authorization, code) = try pairing.begin(for: requester(link))
                if let code { say("pairing code for \(link.name): \(code)") }
                return answer(R.PairBegin.Begun(authorization: authorization))
            } catch {
                say("refused to begin pairing with \(link.name) from \(link.peer): \(error.message)")
                throw error
            }
        case R.PairFinish.method:
            let code = try read(R.PairFinish.self, params).code
            do {
                let token = try pairing.finish(for: requester(link), code: code)
                authorize(link)
                say("paired with \(link.name)")
                return answer(R.PairFinish.Paired(token: token))
            } catch {
                say("refused pairing with \(link.name): \(error.message)")
                throw error
            }
        case R.Status.method:
            var sessions: [R.Status.Session] = []
            // Sessions only for an authorized link: anyone may claim a controllerId before pairing.
            if let current, link.authorized, current.controller == link.controllerID {
                sessions.append(R.Status.Session(session: current.session, state: player.state))
            }
            let audio = link.authorized ? streams.filter { $0.key.controller == link.controllerID }.compactMap { key, stream in
                stream.player.map { R.Status.AudioStream(stream: key.name, $0.buffer.statistics) }
            } : []
            return answer(R.Status.Report(volume: volume, muted: muted, sessions: sessions, streams: audio.isEmpty ? nil : audio))
        default:
            guard link.authorized else {
                throw ReferenceProtocolError(.notAuthorized, "\(configuration.name) needs pairing first: call pair.begin and pair.finish with the code it shows")
            }
            return try await handleAuthorized(method, params, from: link)
        }
    }

    private func requester(_ link: ControllerLink) -> PairingBook.Requester {
        PairingBook.Requester(connection: ObjectIdentifier(link), controller: link.controllerID, address: link.host)
    }

    private func handleAuthorized(_ method: String, _ params: JSONObject, from link: ControllerLink) async throws -> JSONValue {
        typealias R = ReferenceRequest
        switch method {
        case R.Play.method:
            let request = try read(R.Play.self, params)
            let session = try sessionName(request.session)
            let url = request.url
            guard let scheme = URL(string: url)?.scheme?.lowercased(), ["http", "https", "file"].contains(scheme) else {
                throw ReferenceProtocolError(.badRequest, "\"url\" must be an http or https URL")
            }
            guard scheme != "file" else {
                // A file URL names a file on the controller's machine. Probing it here would tell the
                // controller what is on the receiver's disk, so it is refused unread, in one sentence.
                throw ReferenceProtocolError(.badRequest, "\(configuration.name) plays only http and https URLs: it cannot read files on the controller's machine, so serve the file over HTTP")
            }
            let application = request.application
            if let application, !applications.has(application) {
                throw ReferenceProtocolError(.noSuchApplication, "\(configuration.name) has no application \(application); it has \(ReceiverApplications.all.joined(separator: ", "))")
            }
            let media = try await MediaPlayer.probe(url, ffprobe: configuration.ffprobe)
            // The probe took a while: a controller that left meanwhile must not start playing to the room.
            guard links[ObjectIdentifier(link)] != nil, link.authorized else {
                throw ReferenceProtocolError(.notAuthorized, "\(link.name) disconnected before \(url) could start")
            }
            if let previous = current, previous.controller != link.controllerID || previous.session != session {
                var ended = player.state
                ended.phase = .ended
                notifyOwner(ReceiverEvent.PlaybackEnded(session: previous.session, state: ended,
                                                        error: .init(code: 2011, message: "replaced by another session on \(configuration.name)")),
                            controller: previous.controller)
            }
            current = (link.controllerID, session)
            // Its picture in a window of its own, named like a stream's: the receiver, what plays, whose it is.
            let window = configuration.ffplay.flatMap { ffplay in
                configuration.videoOutput == .window ? (VideoWindow.Setup(ffplay: ffplay, title: "\(configuration.name): \(media.title ?? url) from \(link.name)"),
                                                        "session \(session)") : nil
            }
            player.load(media, window: window)
            say("playing \(url) for \(link.name)\(application.map { " in \($0)" } ?? "")" + (player.window.map { ", its picture \($0.summary)" } ?? ""))
            playerChanged()
            return answer(player.state)
        case R.Control.method:
            let request = try read(R.Control.self, params)
            _ = try ownedSession(request.session, link)
            if let seconds = request.position {
                guard seconds >= 0 else { throw ReferenceProtocolError(.badRequest, "\"position\" must be 0 or more seconds") }
                player.seek(to: seconds)
            }
            if let rate = request.speed {
                guard (0.25...4).contains(rate) else { throw ReferenceProtocolError(.unsupported, "\"speed\" must be from 0.25 to 4") }
                player.setSpeed(rate)
            }
            if let playing = request.isPlaying {
                if playing { player.play() } else { player.pause() }
            }
            playerChanged()
            return answer(player.state)
        case R.Stop.method:
            _ = try ownedSession(try read(R.Stop.self, params).session, link)
            player.stop()
            current = nil
            rescheduleCadence()
            return answer(R.Done())
        case R.VolumeSet.method:
            let level = try read(R.VolumeSet.self, params).level
            guard (0...1).contains(level) else { throw ReferenceProtocolError(.badRequest, "\"level\" must be from 0 to 1") }
            setVolume(level, muted: muted)
            return answer(currentVolume)
        case R.VolumeChange.method:
            let steps = try read(R.VolumeChange.self, params).steps
            guard (-100...100).contains(steps) else { throw ReferenceProtocolError(.badRequest, "\"steps\" must be from -100 to 100") }
            setVolume(ReferenceProtocol.volume(volume, changedBy: steps), muted: muted)
            return answer(currentVolume)
        case R.VolumeMute.method:
            setVolume(volume, muted: try read(R.VolumeMute.self, params).muted)
            return answer(currentVolume)
        case R.AppSend.method:
            let request = try read(R.AppSend.self, params)
            let application = request.application
            guard applications.has(application) else {
                throw ReferenceProtocolError(.noSuchApplication, "\(configuration.name) has no application \(application); it has \(ReceiverApplications.all.joined(separator: ", "))")
            }
            let data = request.data.bytes
            guard data.count <= ReferenceProtocol.maximumApplicationMessage else {
                throw ReferenceProtocolError(.badRequest, "a message of \(data.count) bytes is over the \(ReferenceProtocol.maximumApplicationMessage)-byte limit")
            }
            for reply in applications.handle(Array(data), for: application) {
                link.connection?.post(ReceiverEvent.AppData(application: application, session: request.session, data: Base64Payload(reply)))
            }
            return answer(R.Done())
        case R.StreamStart.method:
            return answer(try startStream(try read(R.StreamStart.self, params), from: link))
        case R.StreamStop.method:
            let name = try read(R.StreamStop.self, params).stream
            guard streams[StreamKey(controller: link.controllerID, name: name)] != nil else {
                throw ReferenceProtocolError(.noSuchSession, "\(link.name) has no stream \(name) on \(configuration.name)")
            }
            return answer(stopStream(StreamKey(controller: link.controllerID, name: name)))
        default:
            throw RPCError.methodNotFound(method)
        }
    }

    private func startStream(_ request: ReferenceRequest.StreamStart, from link: ControllerLink) throws -> ReferenceRequest.StreamStart.Opened {
        let name = request.stream
        guard ReceiverAnnouncement.isIdentifier(name) else {
            throw ReferenceProtocolError(.badRequest, "\"stream\" must be 1-64 of A-Z a-z 0-9 . _ -")
        }
        let key = StreamKey(controller: link.controllerID, name: name)
        guard streams[key] == nil else { throw ReferenceProtocolError(.badRequest, "stream \(name) is already open") }
        func number(_ value: Int?, _ key: String, _ range: ClosedRange<Int>) throws(ReferenceProtocolError) -> Int {
            guard let value, range.contains(value) else {
                throw ReferenceProtocolError(.badRequest, "\"\(key)\" must be from \(range.lowerBound) to \(range.upperBound)")
            }
            return value
        }
        let kind: ReceiverStream.Kind
        switch (request.kind, request.codec) {
        case ("audio", "opus") where configuration.announcement.capabilities.contains(.realtimeAudioStreaming):
            let rate = try number(request.sampleRate, "sampleRate", 8_000...48_000)
            guard SampleFormat.opusSampleRates.contains(rate) else { throw ReferenceProtocolError(.unsupported, "Opus has no \(rate) Hz") }
            kind = .audio(sampleRate: rate, channels: try number(request.channels, "channels", 1...2))
        case ("video", "h264") where configuration.announcement.capabilities.contains(.realtimeVideoStreaming):
            kind = .video(width: try number(request.width, "width", 16...3840), height: try number(request.height, "height", 16...2160),
                          frameRate: try number(request.frameRate, "frameRate", 1...120))
        case (let kind, let codec):
            throw ReferenceProtocolError(.unsupported, "\(configuration.name) takes no \(kind) stream in \(codec) (it takes \(configuration.announcement.txt.first { $0.0 == "caps" }?.1 ?? "nothing"))")
        }
        // NAME.wav or NAME.h264, unless another controller's stream of that name records there.
        let recording = configuration.recordDirectory.map { directory in
            let ext = if case .audio = kind { "wav" } else { "h264" }
            let plain = "\(directory)/\(name).\(ext)"
            return streams.values.contains { $0.recording == plain } ? "\(directory)/\(link.controllerID)-\(name).\(ext)" : plain
        }
        let window = configuration.ffplay.flatMap { ffplay in
            configuration.videoOutput == .window ? VideoWindow.Setup(ffplay: ffplay, title: "\(configuration.name): \(name) from \(link.name)") : nil
        }
        let stream: ReceiverStream
        do {
            stream = try ReceiverStream(name: name, kind: kind, host: configuration.host,
                                        sender: link.host, recording: recording, reportOnsets: configuration.reportOnsets,
                                        audioOutput: configuration.audioOutput, alsaDevice: configuration.alsaDevice, gain: gain,
                                        window: window, dropVideoPacket: configuration.dropVideoPacket, loop: loop) { [weak link] in
                link?.connection?.post(ReceiverEvent.KeyframeRequest(stream: name))
            }
        } catch {
            throw ReferenceProtocolError(.unsupported, "cannot open stream \(name): \(error)")
        }
        streams[key] = stream
        say("stream \(name) from \(link.name): \(request.kind) \(request.codec) on UDP port \(stream.port)" + (stream.window.map { ", \($0.summary)" } ?? ""))
        return .init(port: stream.port)
    }

    @discardableResult
    private func stopStream(_ key: StreamKey) -> ReferenceRequest.StreamStop.Summary {
        guard let stream = streams.removeValue(forKey: key) else { return .init(packets: 0, lost: 0, frames: 0) }
        let summary = stream.stop()
        closingPlayers.removeAll { $0.hasEnded }
        if let player = stream.player { closingPlayers.append(player) }
        let playout: String = stream.player.map { ", " + Self.describe($0.buffer.statistics, deviceUnderruns: $0.deviceUnderruns) } ?? ""
        say("stream \(key.name) ended: \(stream.packets) packets, \(stream.lost) lost, \(stream.frames) frames"
            + (stream.strangers > 0 ? ", \(stream.strangers) datagrams from other hosts dropped" : "")
            + (stream.recording.map { ", recorded to \($0)" } ?? "") + (stream.window.map { ", \($0.summary)" } ?? "") + playout)
        return summary
    }

    private func sessionName(_ session: String) throws(ReferenceProtocolError) -> String {
        guard !session.isEmpty, session.utf8.count <= 64 else {
            throw ReferenceProtocolError(.badRequest, "\"session\" must be 1 to 64 bytes")
        }
        return session
    }

    private func ownedSession(_ name: String, _ link: ControllerLink) throws(ReferenceProtocolError) -> String {
        let session = try sessionName(name)
        guard let current, current.controller == link.controllerID, current.session == session else {
            throw ReferenceProtocolError(.noSuchSession, "\(link.name) has no session \(session) on \(configuration.name) (it ended, or another session replaced it)")
        }
        return session
    }

    // MARK: State going out

    private var currentVolume: ReferenceRequest.Volume { ReferenceRequest.Volume(volume: volume, muted: muted) }

    /// Reads a request into its type; one that does not decode is a bad request naming the member.
    private func read<Request: WireRequest>(_ type: Request.Type, _ params: JSONObject) throws(ReferenceProtocolError) -> Request {
        do { return try Request.decode(params) } catch { throw ReferenceProtocolError(.badRequest, error.message) }
    }

    private func answer(_ value: some Encodable) -> JSONValue { WireEncoder.encode(value) }

    /// What real-time audio is multiplied by: the volume, or nothing when muted.
    private var gain: Float { muted ? 0 : Float(volume) }

    /// A stream's playout, as the console and the end of a stream say it.
    static func describe(_ statistics: AudioPlayoutBuffer.Statistics, deviceUnderruns: Int = 0) -> String {
        func ms(_ duration: Duration) -> Int { Int((duration / .milliseconds(1)).rounded()) }
        return "\(statistics.underruns) underruns, \(statistics.concealedFrames) frames concealed (\(statistics.lost) lost, \(statistics.late) late), "
            + "buffering \(ms(statistics.bufferedDelay)) ms for a target of \(ms(statistics.targetDelay)) ms (jitter \(ms(statistics.jitter)) ms)"
            + (statistics.skipped > .zero ? ", \(ms(statistics.skipped)) ms skipped to catch up with the sound output (its start or a stall)" : "")
            + (deviceUnderruns > 0 ? ", the sound device ran dry \(deviceUnderruns) times" : "")
    }

    private func setVolume(_ level: Double, muted mute: Bool) {
        guard level != volume || mute != muted else { return }
        volume = level
        muted = mute
        for stream in streams.values { stream.player?.setGain(gain) }
        player.gain = gain
        for link in links.values where link.authorized { link.connection?.post(ReceiverEvent.VolumeChanged(currentVolume)) }
    }

    private func notifyOwner(_ event: some WireNotification, controller: String) {
        for link in links.values where link.authorized && link.controllerID == controller { link.connection?.post(event) }
    }

    /// The player moved: tell the session's controller, and end the session when the media did.
    private func playerChanged() {
        guard let current else { return }
        let state = player.state
        switch state.phase {
        case .ended, .failed:
            let failure = state.phase == .failed ? ReceiverEvent.PlaybackEnded.Failure(code: 2011, message: player.failure ?? "playback failed") : nil
            notifyOwner(ReceiverEvent.PlaybackEnded(session: current.session, state: state, error: failure), controller: current.controller)
            say(state.phase == .ended ? "\(current.session) reached the end" : "\(current.session) failed: \(player.failure ?? "?")")
            self.current = nil
        default:
            notifyOwner(ReceiverEvent.PlaybackState(session: current.session, state: state), controller: current.controller)
        }
        rescheduleCadence()
    }

    /// While playing, the state goes out every second even when nothing else happens.
    private func rescheduleCadence() {
        if let cadence { loop.cancelTimer(cadence) }
        cadence = nil
        guard current != nil, player.phase == .playing else { return }
        cadence = loop.schedule(after: .seconds(1)) { [unowned self] in self.assumeIsolated { $0.playerChanged() } }
    }

    // MARK: The receiver's own buttons (standard input)

    func console(_ line: String) {
        let words = line.split(separator: " ").map(String.init)
        switch words.first {
        case "volume"?:
            guard words.count == 2, let percent = Double(words[1]), (0...100).contains(percent) else { return say("volume needs 0-100") }
            setVolume(percent / 100, muted: muted)
            say("volume \(Int(percent))%")
        case "mute"?: setVolume(volume, muted: true); say("muted")
        case "unmute"?: setVolume(volume, muted: false); say("unmuted")
        case "pause"?: player.pause(); playerChanged(); say("paused")
        case "resume"?: player.play(); playerChanged(); say("resumed")
        case "status"?:
            let playing = current.map { "\($0.session): \(player.state.phase.rawValue) at \(String(format: "%.1f", player.position)) s" } ?? "nothing playing"
            say("volume \(Int((volume * 100).rounded()))%\(muted ? " muted" : ""), \(links.count) controller(s), \(playing), sound to \(configuration.audioOutput.rawValue)"
                + ", video to \(configuration.videoOutput == .window ? "windows" : "none")")
            if let current, let window = player.window, let picture = player.media?.picture {
                say("\(current.session): picture \(picture.width)x\(picture.height) at \(picture.frameRate) fps, \(window.summary)")
            }
            for (key, stream) in streams {
                if let player = stream.player { say("stream \(key.name): \(Self.describe(player.buffer.statistics, deviceUnderruns: player.deviceUnderruns))") }
                if case .video(let width, let height, let frameRate) = stream.kind {
                    say("stream \(key.name): video \(width)x\(height) at \(frameRate) fps, \(stream.frames) frames, \(stream.lost) lost"
                        + (stream.recording.map { ", recording to \($0)" } ?? "") + ", " + (stream.window?.summary ?? "shown nowhere"))
                }
            }
        case nil: break
        default: say("unknown command \"\(words[0])\"; use volume N, mute, unmute, pause, resume or status")
        }
    }
}

/// One line on the receiver's console (standard output).
func say(_ line: String) {
    print(line)
}
