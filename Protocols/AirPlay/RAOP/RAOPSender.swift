import NIOCore
import NIOPosix

/// One AirPlay 1 stream to one receiver: the RTSP session (OPTIONS, ANNOUNCE, SETUP, RECORD,
/// SET_PARAMETER, FLUSH, TEARDOWN, with Digest authentication), and the audio as ALAC in RTP,
/// paced in real time against the monotonic clock, with sync packets each second, resends from a
/// history and answers to the receiver's timing requests.
///
/// An actor: `send(pcm:)` suspends between packets, so volume and flush calls interleave with a
/// stream in progress and see a consistent state.
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
    /// When the first audio packet of the stream left (for first-audio latency figures).
    public private(set) var firstPacketSent: ContinuousClock.Instant?

    private let history = PacketHistory()
    private let resendResponder: RAOPResendResponder
    private let timingResponder = RAOPTimingResponder()
    private let sessionID = String(UInt32.random(in: 1_000_000_000 ... .max))
    private let ssrc = UInt32.random(in: .min ... .max)
    private var rtsp: RTSPClient?
    private var encryption: RAOPEncryption?
    private var authentication: DigestAuthentication?
    private var session: String?
    private var channels: [any Channel] = []
    private var audioChannel: (any Channel)?
    private var controlChannel: (any Channel)?
    private var audioAddress: SocketAddress?
    private var controlAddress: SocketAddress?
    private var sequence = UInt16.random(in: .min ... .max)
    private var timestamp = UInt32.random(in: .min ... .max)
    /// Where the stream's clock started, and how many frames were sent since: packet n is due at
    /// start + n × 352 / 44,100 s, so a late wake-up never accumulates into drift.
    private var timeline: (start: ContinuousClock.Instant, frames: Int)?
    private var packetsSinceSync = 0
    /// Silent lead-in packets sent so far (each stream and each resume starts with some).
    public private(set) var leadInPacketsSent = 0
    private var pending: [Int16] = []

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
                ("Transport", "RTP/AVP/UDP;unicast;interleaved=0-1;mode=record;control_port=\(controlChannel?.localAddress?.port ?? 0);timing_port=\(channels.last?.localAddress?.port ?? 0)"),
            ])
            guard let transportHeader = setup.header("Transport") else {
                throw RAOPError(.malformedResponse, "the receiver's SETUP answer has no Transport header")
            }
            let transport = try RTSPTransport(header: transportHeader)
            session = setup.header("Session").map { String($0.split(separator: ";").first ?? "") }
            do {
                audioAddress = try SocketAddress.makeAddressResolvingHost(client.remoteAddress, port: transport.serverPort)
                controlAddress = try SocketAddress.makeAddressResolvingHost(client.remoteAddress, port: transport.controlPort)
            } catch {
                throw RAOPError(.malformedResponse, "the receiver's address \(client.remoteAddress) is not usable for UDP: \(error)")
            }
            let record = try await request("RECORD", headers: [("Range", "npt=0-"), ("RTP-Info", "seq=\(sequence);rtptime=\(timestamp)")])
            audioLatency = record.header("Audio-Latency").flatMap { Int($0.trimmingSpaces) }
            try await waitForTimingExchange()
        } catch {
            await closeAll()
            throw error
        }
    }

    /// Streams 44.1 kHz interleaved stereo samples, 352 frames a packet, each packet sent when due
    /// in real time. Samples short of a whole packet wait for the next call (or `finish`).
    public func send(pcm: [Int16]) async throws(RAOPError) {
        guard rtsp != nil, audioChannel != nil else { throw RAOPError(.notRecording, "send(pcm:) needs a started session") }
        pending += pcm
        let packetSamples = ALACFrame.framesPerPacket * ALACFrame.channels
        // Each packet leaves `pending` before the wait for its time: a `flush` may run during
        // that wait (an actor is re-entrant) and empty it.
        while pending.count >= packetSamples {
            let packet = pending[..<packetSamples]
            pending.removeFirst(packetSamples)
            try await sendPacket(packet)
        }
    }

    /// How much of what was sent the receiver has not played yet (its buffer): a URL paused by
    /// `flush` resumes this much earlier, so nothing the person did not hear is skipped.
    public var unplayed: Duration {
        guard let timeline else { return .zero }
        let sent = Duration.seconds(Double(timeline.frames) / Double(ALACFrame.sampleRate))
        let played = max(.zero, ContinuousClock.now - timeline.start - .seconds(Double(configuration.latencyFrames + UInt32(audioLatency ?? 0)) / Double(ALACFrame.sampleRate)))
        return max(.zero, sent - played)
    }

    /// Sends what `send(pcm:)` holds back, padded with silence to a whole packet.
    public func finish() async throws(RAOPError) {
        guard !pending.isEmpty else { return }
        let last = pending
        pending = []
        try await sendPacket(last[...])
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
        let text = RAOPMetadata.progressText(current: timestamp, positionFrames: Self.frames(position), durationFrames: Self.frames(duration))
        _ = try await request("SET_PARAMETER", headers: [("Content-Type", "text/parameters")], body: Array(text.utf8))
    }

    /// Sends the track's title, artist and album (absent ones left out), for the audio the next
    /// `send(pcm:)` hands over.
    public func setMetadata(title: String?, artist: String?, album: String?) async throws(RAOPError) {
        let body = RAOPMetadata.listingItem(title: title, artist: artist, album: album)
        guard body.count <= 65536 else { throw RAOPError(.invalidArgument, "metadata of \(body.count) bytes is more than a receiver takes") }
        _ = try await request("SET_PARAMETER", headers: [("Content-Type", "application/x-dmap-tagged"), ("RTP-Info", "rtptime=\(timestamp)")], body: body)
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
        _ = try await request("FLUSH", headers: [("RTP-Info", "seq=\(sequence);rtptime=\(timestamp)")])
        pending = []
        timeline = nil
    }

    /// Ends the session (TEARDOWN, whose failure is ignored: the receiver may be gone) and closes
    /// every socket. Safe to call twice.
    public func teardown() async {
        if rtsp != nil { _ = try? await request("TEARDOWN") }
        await closeAll()
    }

    private func sendPacket(_ samples: ArraySlice<Int16>) async throws(RAOPError) {
        guard let audioChannel, let audioAddress else {
            throw RAOPError(.notRecording, "the session has no audio channel (not started, or torn down)")
        }
        let now = ContinuousClock.now
        if let current = timeline {
            let due = current.start + .seconds(Double(current.frames) / Double(ALACFrame.sampleRate))
            if now - due > .milliseconds(500) {
                // The caller fell behind (an underrun): start the timeline again rather than burst.
                try beginStream(at: now, channel: audioChannel, address: audioAddress)
            } else if due > now {
                do { try await Task.sleep(until: due, clock: .continuous) } catch {
                    throw RAOPError(.notRecording, "the stream was cancelled")
                }
            }
        } else {
            try beginStream(at: now, channel: audioChannel, address: audioAddress)
        }
        if packetsSinceSync >= ALACFrame.sampleRate / ALACFrame.framesPerPacket { sendSync(first: false) }
        try emit(samples, marker: false, channel: audioChannel, address: audioAddress)
        timeline?.frames += ALACFrame.framesPerPacket
    }

    /// Starts a timeline at `now`: the first sync (flagged) ties the caller's first frame to now,
    /// then the lead-in silence goes out at once with timestamps just before it, the first packet
    /// marked (see the type's comment for why the silence).
    private func beginStream(at now: ContinuousClock.Instant, channel: any Channel, address: SocketAddress) throws(RAOPError) {
        let packets = (configuration.leadInFrames + ALACFrame.framesPerPacket - 1) / ALACFrame.framesPerPacket
        sendSync(first: true, nextTimestamp: timestamp &+ UInt32(packets * ALACFrame.framesPerPacket))
        let silence = [Int16](repeating: 0, count: ALACFrame.framesPerPacket * ALACFrame.channels)
        for index in 0..<packets { try emit(silence[...], marker: index == 0, channel: channel, address: address) }
        timeline = (now, 0)
        leadInPacketsSent += packets
    }

    /// One audio packet out, at the next sequence number and timestamp, kept for resends.
    private func emit(_ samples: ArraySlice<Int16>, marker: Bool, channel: any Channel, address: SocketAddress) throws(RAOPError) {
        var payload = ALACFrame.uncompressed(samples)
        if let encryption { payload = try encryption.encrypt(payload) }
        let packet = RTPAudioPacket(marker: marker, sequence: sequence, timestamp: timestamp, ssrc: ssrc, payload: payload).bytes
        history.record(sequence: sequence, bytes: packet)
        channel.writeAndFlush(AddressedEnvelope(remoteAddress: address, data: channel.allocator.buffer(bytes: packet)), promise: nil)
        if firstPacketSent == nil { firstPacketSent = .now }
        sequence &+= 1
        timestamp &+= UInt32(ALACFrame.framesPerPacket)
        packetsSinceSync += 1
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

    /// Ties `nextTimestamp` (the next packet's, unless a lead-in goes first) to now: the receiver
    /// plays it `latencyFrames` later.
    private func sendSync(first: Bool, nextTimestamp: UInt32? = nil) {
        guard let controlChannel, let controlAddress else { return }
        let next = nextTimestamp ?? timestamp
        let sync = RAOPControlPacket.sync(first: first, playingTimestamp: next &- configuration.latencyFrames, time: .now(), nextTimestamp: next)
        controlChannel.writeAndFlush(AddressedEnvelope(remoteAddress: controlAddress, data: controlChannel.allocator.buffer(bytes: sync.bytes)), promise: nil)
        packetsSinceSync = 0
    }

    /// One request with the session's headers and authorization; a 401 is answered once with the
    /// password, and any other status than 200 is an error naming it.
    private func request(_ method: String, uri requestURI: String? = nil, headers: [(name: String, value: String)] = [],
                         body: [UInt8] = []) async throws(RAOPError) -> RTSPResponse {
        guard let rtsp else { throw RAOPError(.notRecording, "\(method) needs a connected session") }
        let target = requestURI ?? uri
        var retriedWithPassword = false
        while true {
            var all = headers
            if let session { all.append(("Session", session)) }
            if let authentication, let password = configuration.password {
                all.append(("Authorization", authentication.authorization(method: method, uri: target, password: password)))
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

    /// The audio, control and timing UDP sockets, on ephemeral ports of the address the RTSP
    /// connection leaves from.
    private func openChannels() async throws(RAOPError) {
        let local = rtsp?.localAddress ?? "0.0.0.0"
        do {
            for handler in [nil, resendResponder as (any ChannelHandler & Sendable)?, timingResponder] {
                let bootstrap = DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton).channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        if let handler { try channel.pipeline.syncOperations.addHandler(handler) }
                    }
                }
                channels.append(try await bootstrap.bind(host: local, port: 0).get())
            }
        } catch {
            throw RAOPError(.connectionFailed, "cannot open UDP sockets on \(local) for audio, control and timing: \(error)")
        }
        audioChannel = channels[0]
        controlChannel = channels[1]
    }

    private func closeAll() async {
        let open = channels
        channels = []
        audioChannel = nil
        controlChannel = nil
        for channel in open { try? await channel.close() }
        await rtsp?.close()
        rtsp = nil
        timeline = nil
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
