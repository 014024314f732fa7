import NIOCore
import NIOPosix
import PCMPlayback

/// One AirPlay 1 stream to one receiver: the RTSP session (OPTIONS, ANNOUNCE, SETUP, RECORD,
/// SET_PARAMETER, FLUSH, TEARDOWN, with Digest authentication), and the audio as ALAC in RTP,
/// paced in real time against the monotonic clock by a thread of its own (`RAOPStreamer`), with
/// sync packets each second, resends from a history and answers to the receiver's timing requests.
///
/// Audio comes from a `PCMSource` the stream's thread reads (`play`), or in pieces a caller hands
/// over (`send(pcm:)`). An actor: volume, metadata and flush calls interleave with a stream in
/// progress and see a consistent state.
///
/// Each stream (the first packet after `start`, after `flush`, or after an underrun) is led by
/// `leadInFrames` of silence, sent at once and timed before the caller's first frame: shairport-sync
/// 3.3.8 drops about the first 70 ms (9 packets) of what it is given each time it starts playing,
/// so without it a caller would lose the start of every stream and every resume. The sync packet
/// ties the caller's first frame, not the silence, to now, so the silence adds no latency.
public actor RAOPSender {
    public let configuration: RAOPSenderConfiguration
    /// The receiver's `Audio-Latency` from its RECORD answer, in frames.
    public private(set) var audioLatency: Int?

    private let history = PacketHistory()
    private let resendResponder: RAOPResendResponder
    private let timingResponder = RAOPTimingResponder()
    private let sessionID = String(UInt32.random(in: 1_000_000_000 ... .max))
    private let ssrc = UInt32.random(in: .min ... .max)
    private var rtsp: RTSPClient?
    private var encryption: RAOPEncryption?
    private var authentication: DigestAuthentication?
    private var session: String?
    /// The control and timing channels (event loop), and the UDP sockets the stream's thread sends on.
    private var channels: [any Channel] = []
    private var sockets: RAOPStreamer.Sockets?
    /// The control channel's socket (the channel owns it), which the stream's thread sends syncs on.
    private var controlSocket: Int32?
    /// The next packet's sequence number and timestamp: where the next stream starts.
    private var sequence = UInt16.random(in: .min ... .max)
    private var timestamp = UInt32.random(in: .min ... .max)
    /// The timestamp of what a caller hands over next: the stream's next packet's, past what
    /// `send(pcm:)` queued. What metadata and progress are tied to.
    private var nextTimestamp: UInt32 {
        (streamer?.progress.timestamp ?? timestamp) &+ UInt32(truncatingIfNeeded: queue?.queuedFrames ?? 0)
    }
    /// The stream being sent, what `send(pcm:)` feeds it with, and its end being waited for.
    private var streamer: RAOPStreamer?
    private var queue: PCMQueue?
    private var retiring: Task<RAOPStreamEnding?, Never>?
    /// What the last stream had done when it ended (for `unplayed` after it).
    private var lastProgress: RAOPStreamer.Progress?
    private var retiredLeadIn = 0
    /// Silent lead-in packets sent so far (each stream and each resume starts with some).
    public var leadInPacketsSent: Int { retiredLeadIn + (streamer?.progress.leadInPackets ?? 0) }

    public init(configuration: RAOPSenderConfiguration) {
        self.configuration = configuration
        resendResponder = RAOPResendResponder(history: history)
    }

    /// Timing requests answered, packets resent, and resends asked for that were too old.
    public nonisolated var counters: (timingAnswers: Int, resent: Int, missed: Int) {
        (timingResponder.answered.load(ordering: .relaxed), resendResponder.resent.load(ordering: .relaxed),
         resendResponder.missed.load(ordering: .relaxed))
    }

    private var uri: String { "rtsp://\(rtsp?.localAddress ?? "0.0.0.0")/\(sessionID)" }

    /// Connects and brings the session to recording: OPTIONS, ANNOUNCE, SETUP, RECORD. On failure
    /// everything opened is closed again.
    public func start() async throws(RAOPError) {
        guard rtsp == nil else { throw RAOPError(.invalidArgument, "the session to \(configuration.host) was already started") }
        tornDown = false
        // The sender's DACP-ID names its remote-control service too, and the receiver puts the
        // Active-Remote on each button it sends there.
        let client = try await RTSPClient.connect(host: configuration.host, port: configuration.port, commonHeaders: [
            ("User-Agent", configuration.userAgent), ("Client-Instance", configuration.dacpID), ("DACP-ID", configuration.dacpID),
            ("Active-Remote", configuration.activeRemote),
        ], timeout: configuration.requestTimeout)
        rtsp = client
        do throws(RAOPError) {
            _ = try await request("OPTIONS", uri: "*")
            if configuration.encrypted { encryption = try RAOPEncryption() }
            let sdp = SDPAnnouncement(sessionID: sessionID, localAddress: client.localAddress, remoteAddress: client.remoteAddress, encryption: encryption)
            _ = try await request("ANNOUNCE", headers: [("Content-Type", "application/sdp")], body: Array(sdp.text.utf8))
            try await openChannels()
            let setup = try await request("SETUP", headers: [
                ("Transport", "RTP/AVP/UDP;unicast;interleaved=0-1;mode=record;control_port=\(channels.first?.localAddress?.port ?? 0);timing_port=\(channels.last?.localAddress?.port ?? 0)"),
            ])
            guard let transportHeader = setup.header("Transport") else {
                throw RAOPError(.malformedResponse, "the receiver's SETUP answer has no Transport header")
            }
            let transport = try RTSPTransport(header: transportHeader)
            session = setup.header("Session").map { String($0.split(separator: ";").first ?? "") }
            try connectAudio(to: client, transport: transport)
            let record = try await request("RECORD", headers: [("Range", "npt=0-"), ("RTP-Info", "seq=\(sequence);rtptime=\(timestamp)")])
            audioLatency = record.header("Audio-Latency").flatMap { Int($0.trimmingSpaces) }
            try await waitForTimingExchange()
            recording = true
        } catch {
            await closeAll()
            throw error
        }
    }

    /// Streams `source` (44.1 kHz stereo) from now on, read and paced by a thread of its own, in
    /// place of what streamed; until the source ends, `stopStreaming`, `flush` or `teardown`.
    /// `onFirstPacket` runs on that thread once the stream's first packet left.
    @discardableResult
    public func play(_ source: any PCMSource, onFirstPacket: @escaping @Sendable () -> Void = {}) async throws(RAOPError) -> RAOPStream {
        try await play(source, onFirstPacket: onFirstPacket, onEnd: {})
    }

    /// `onEnd` runs on the stream's thread as it leaves, however it ends.
    @discardableResult
    private func play(_ source: any PCMSource, onFirstPacket: @escaping @Sendable () -> Void, onEnd: @escaping @Sendable () -> Void) async throws(RAOPError) -> RAOPStream {
        // Another play may have started a stream while this one waited: that one stops too.
        repeat { await retire(stopping: true) } while streamer != nil
        guard recording, let sockets else { throw RAOPError(.notRecording, "play needs a session started and not torn down") }
        let start = RAOPStreamer.Start(sequence: sequence, timestamp: timestamp, ssrc: ssrc, latencyFrames: configuration.latencyFrames,
                                       leadInPackets: (configuration.leadInFrames + ALACFrame.framesPerPacket - 1) / ALACFrame.framesPerPacket,
                                       encryption: encryption)
        let streamer = try RAOPStreamer(source: source, sockets: sockets, start: start, history: history, onFirstPacket: onFirstPacket, onEnd: onEnd)
        self.streamer = streamer
        return RAOPStream(streamer: streamer)
    }

    /// Stops the stream (the receiver plays what it holds unless `flush` follows); how it ended,
    /// nil if none was streaming.
    @discardableResult
    public func stopStreaming() async -> RAOPStreamEnding? { await retire(stopping: true) }

    /// Waits until the stream ends by itself (its source ended, or the receiver went away).
    public func streamEnded() async -> RAOPStreamEnding? { await retire(stopping: false) }

    /// Streams 44.1 kHz interleaved stereo samples, 352 frames a packet, each packet sent when due
    /// in real time: returns once they are queued, waiting while half a second is queued already.
    /// Samples short of a whole packet wait for the next call (or `finish`).
    public func send(pcm: [Int16]) async throws(RAOPError) {
        if queue == nil || streamer == nil {
            let queue = PCMQueue()
            // A stream that ends (the receiver went away) lets waiting callers go.
            try await play(queue, onFirstPacket: {}, onEnd: { queue.finish() })
            self.queue = queue
        }
        await queue?.append(pcm)
        if case .failed(let error)? = streamer?.ending {
            await retire(stopping: true)
            throw error
        }
    }

    /// Sends what `send(pcm:)` queued, the last packet padded with silence, and returns once it left.
    public func finish() async throws(RAOPError) {
        guard queue != nil else { return }
        queue?.finish()
        if case .failed(let error)? = await retire(stopping: false) { throw error }
    }

    /// How much of what was sent the receiver has not played yet (its buffer): a URL paused by
    /// `flush` resumes this much earlier, so nothing the person did not hear is skipped.
    public var unplayed: Duration {
        guard let timeline = (streamer?.progress ?? lastProgress)?.timeline else { return .zero }
        let rate = Double(ALACFrame.sampleRate)
        let sent = Double(timeline.frames) / rate
        let played = Double(MonotonicClock.now() &- timeline.start) / 1e9 - Double(configuration.latencyFrames + UInt32(audioLatency ?? 0)) / rate
        return .seconds(max(0, sent - max(0, played)))
    }

    /// Ends the stream and takes over where it left the wire (sequence, timestamp). `stopping`
    /// false waits for it to end by itself. Every caller waits for the same end, and a stop asked
    /// while others wait for the natural end still stops it.
    @discardableResult
    private func retire(stopping: Bool) async -> RAOPStreamEnding? {
        if stopping {
            streamer?.stop()
            queue?.finish()
        }
        if retiring == nil, let streamer {
            retiring = Task {
                let ending = await streamer.ended
                let progress = streamer.progress
                (sequence, timestamp, lastProgress) = (progress.sequence, progress.timestamp, progress)
                retiredLeadIn += progress.leadInPackets
                (self.streamer, queue, retiring) = (nil, nil, nil)
                return ending
            }
        }
        return await retiring?.value ?? nil
    }

    /// Sets the receiver's volume in AirPlay's dB scale: −30 (quietest) to 0, or −144 for mute.
    public func setVolume(dB: Double) async throws(RAOPError) {
        let value = dB <= -144 ? -144 : min(0, max(-30, dB))
        let text = "volume: " + String(format6: value) + "\r\n"
        _ = try await request("SET_PARAMETER", headers: [("Content-Type", "text/parameters")], body: Array(text.utf8))
    }

    /// Tells the receiver where the track is, for its display: `position` into a track of
    /// `duration`, for the audio the next `send(pcm:)` hands over (what it plays now is the
    /// receiver's latency behind that).
    public func setProgress(position: Duration, duration: Duration) async throws(RAOPError) {
        guard position >= .zero, duration >= position, duration < .seconds(Int64(UInt32.max) / Int64(ALACFrame.sampleRate)) else {
            throw RAOPError(.invalidArgument, "a progress of \(position) into a track of \(duration) is not a position in it")
        }
        _ = try await request("SET_PARAMETER") {
            let text = RAOPMetadata.progressText(current: nextTimestamp, positionFrames: Self.frames(position), durationFrames: Self.frames(duration))
            return ([("Content-Type", "text/parameters")], Array(text.utf8))
        }
    }

    /// Sends the track's title, artist and album (absent ones left out), for the audio the next
    /// `send(pcm:)` hands over.
    public func setMetadata(title: String?, artist: String?, album: String?) async throws(RAOPError) {
        let body = RAOPMetadata.listingItem(title: title, artist: artist, album: album)
        guard body.count <= 65536 else { throw RAOPError(.invalidArgument, "metadata of \(body.count) bytes is more than a receiver takes") }
        _ = try await request("SET_PARAMETER") { ([("Content-Type", "application/x-dmap-tagged"), ("RTP-Info", "rtptime=\(nextTimestamp)")], body) }
    }

    /// 44.1 kHz frames in `duration` (which the caller checked fits in 32 bits).
    private static func frames(_ duration: Duration) -> UInt32 {
        let (seconds, attoseconds) = duration.components
        return UInt32(seconds * Int64(ALACFrame.sampleRate) + attoseconds / 1_000_000_000_000 * Int64(ALACFrame.sampleRate) / 1_000_000)
    }

    /// Drops what the receiver has buffered (pause, seek): it plays nothing before the next packet
    /// (the FLUSH names its sequence number and timestamp). The next `send(pcm:)` resumes: a new
    /// timeline with a flagged first sync, the lead-in silence and the marker. Samples held back
    /// for a whole packet are dropped with the rest.
    public func flush() async throws(RAOPError) {
        await retire(stopping: true)
        lastProgress = nil
        _ = try await request("FLUSH") { ([("RTP-Info", "seq=\(sequence);rtptime=\(timestamp)")], []) }
    }

    /// Ends the session (TEARDOWN, whose failure is ignored: the receiver may be gone) and closes
    /// every socket. Safe to call twice.
    public func teardown() async {
        tornDown = true
        recording = false
        await retire(stopping: true)
        if rtsp != nil { _ = try? await request("TEARDOWN") }
        await closeAll()
    }

    /// Whether `teardown` was asked: the connection's end is then ours.
    private var tornDown = false

    /// Returns when the session's RTSP connection is gone, with why: the receiver closed or reset
    /// it (its software stopped: switched off, restarted), or it stopped answering (a request ran
    /// out of time); nil after `teardown` or before `start`. A receiver that loses power closes
    /// nothing: that is noticed at the next request or packet.
    public func connectionLost() async -> RAOPError? {
        guard let rtsp, !tornDown else { return nil }
        await rtsp.closed()
        guard !tornDown else { return nil }
        return rtsp.closeReason ?? RAOPError(.connectionClosed, "the receiver closed the session's connection")
    }

    /// How long `start` waited for the receiver's first timing request (nil before it did).
    public private(set) var timingWait: Duration?

    /// Waits (bounded by the request timeout) until the receiver's first timing request has been
    /// answered: a receiver ignores sync packets before that, and drops the audio sent before its
    /// first accepted sync (shairport-sync: "Sync packet received before we got a timing packet back").
    private func waitForTimingExchange() async throws(RAOPError) {
        let clock = ContinuousClock(), started = clock.now
        while timingResponder.answered.load(ordering: .relaxed) == 0 {
            guard clock.now - started < configuration.requestTimeout else {
                throw RAOPError(.timedOut, "the receiver sent no timing request within \(configuration.requestTimeout) of RECORD")
            }
            do { try await Task.sleep(for: .milliseconds(2)) } catch { throw RAOPError(.notRecording, "the start was cancelled") }
        }
        timingWait = clock.now - started
    }

    /// Between a successful `start` and `teardown`: only then may a stream run on the sockets.
    private var recording = false

    /// Whether a request is on the wire, and the callers waiting for their turn, in order.
    private var requestInFlight = false
    private var waitingToRequest: [CheckedContinuation<Void, Never>] = []

    /// One request with the session's headers and authorization; a 401 is answered once with the
    /// password, and any other status than 200 is an error naming it. One at a time, in the order
    /// asked: shairport-sync 3.3.8 reads a request sent before the last one's answer as part of
    /// that one's body, answers out of step, and the session is lost.
    private func request(_ method: String, uri requestURI: String? = nil, headers: [(name: String, value: String)] = [],
                         body: [UInt8] = []) async throws(RAOPError) -> RTSPResponse {
        try await request(method, uri: requestURI) { (headers, body) }
    }

    /// A request whose headers and body are made once its turn comes: what it says of the stream
    /// (timestamps) is then current.
    private func request(_ method: String, uri requestURI: String? = nil,
                         content: () -> (headers: [(name: String, value: String)], body: [UInt8])) async throws(RAOPError) -> RTSPResponse {
        if requestInFlight {
            await withCheckedContinuation { waitingToRequest.append($0) }
        } else {
            requestInFlight = true
        }
        defer {
            if waitingToRequest.isEmpty { requestInFlight = false } else { waitingToRequest.removeFirst().resume() }
        }
        guard let rtsp else { throw RAOPError(.notRecording, "\(method) needs a connected session") }
        let target = requestURI ?? uri
        let (headers, body) = content()
        var retriedWithPassword = false
        while true {
            var all = headers
            if let session { all.append(("Session", session)) }
            if let authentication, let password = configuration.password {
                all.append(("Authorization", try authentication.authorization(method: method, uri: target, password: password)))
            }
            let response = try await rtsp.send(RTSPRequest(method: method, uri: target, headers: all, body: body))
            switch response.status {
            case 200:
                return response
            case 401:
                guard let password = configuration.password, !password.isEmpty else {
                    throw RAOPError(.authorizationRequired, "the receiver \(configuration.host) asks for a password (\(method) answered 401)")
                }
                guard !retriedWithPassword, authentication == nil || !retriedWithPassword,
                      let challenge = response.header("WWW-Authenticate").flatMap({ DigestAuthentication(challenge: $0) }) else {
                    throw RAOPError(.authorizationFailed, "the receiver \(configuration.host) refused the password (\(method) answered 401 again)")
                }
                if authentication == challenge {
                    throw RAOPError(.authorizationFailed, "the receiver \(configuration.host) refused the password (\(method) answered 401 to it)")
                }
                authentication = challenge
                retriedWithPassword = true
            default:
                throw RAOPError(.unexpectedStatus, "the receiver \(configuration.host) answered \(method) with \(response.status) \(response.reason)",
                                status: response.status)
            }
        }
    }

    /// The control and timing UDP sockets, on ephemeral ports of the address the RTSP connection
    /// leaves from, read by the event loop. The control socket is opened here and handed to the
    /// event loop, so that the stream's thread can send its sync packets on it too.
    private func openChannels() async throws(RAOPError) {
        let local = rtsp?.localAddress ?? "0.0.0.0"
        guard let address = UDPAddress(host: local, port: 0) else { throw RAOPError(.connectionFailed, "the local address \(local) is not numeric") }
        let control = try address.bindSocket()
        do {
            let resends = DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton).channelInitializer { [resendResponder] channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(resendResponder) }
            }
            channels.append(try await resends.withBoundSocket(control).get())
            controlSocket = control
        } catch {
            // Not closed here: once NIO has taken the descriptor it closes it with the failed channel.
            throw RAOPError(.connectionFailed, "cannot read the control socket on \(local): \(error)")
        }
        do {
            let timing = DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton).channelInitializer { [timingResponder] channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(timingResponder) }
            }
            channels.append(try await timing.bind(host: local, port: 0).get())
        } catch {
            throw RAOPError(.connectionFailed, "cannot open a UDP socket on \(local) for timing: \(error)")
        }
    }

    /// The audio socket, connected to the receiver's audio port, and the receiver's control address.
    private func connectAudio(to client: RTSPClient, transport: RTSPTransport) throws(RAOPError) {
        guard let local = UDPAddress(host: client.localAddress, port: 0), let audio = UDPAddress(host: client.remoteAddress, port: transport.serverPort),
              let control = UDPAddress(host: client.remoteAddress, port: transport.controlPort), let controlSocket else {
            throw RAOPError(.malformedResponse, "the receiver's address \(client.remoteAddress) is not usable for UDP")
        }
        sockets = RAOPStreamer.Sockets(audio: try local.bindSocket(connectedTo: audio), control: controlSocket, controlAddress: control)
    }

    private func closeAll() async {
        // No stream may outlive the sockets it sends on (their numbers would be reused).
        recording = false
        repeat { await retire(stopping: true) } while streamer != nil
        let open = channels
        channels = []
        if let sockets { close(sockets.audio) }
        sockets = nil
        controlSocket = nil
        for channel in open { try? await channel.close() }
        await rtsp?.close()
        rtsp = nil
        lastProgress = nil
    }
}

private extension String {
    func leftPadded(_ width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }

    /// A decimal with six places, as iTunes writes volumes ("-15.000000"), without Foundation's formatting.
    init(format6 value: Double) {
        let negative = value < 0
        let micro = Int((abs(value) * 1_000_000).rounded())
        self = (negative ? "-" : "") + "\(micro / 1_000_000)." + String(micro % 1_000_000).leftPadded(6)
    }
}
