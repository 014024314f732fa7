import Foundation
import MediaCodecs
import MediaRouteIPC
import ReferenceProtocol
import RTP
import SoundOutput

/// One real-time stream a controller sends (PROTOCOL.md §4.1): RTP on a UDP port of its own,
/// decoded (audio) or reassembled (video), and recorded when the receiver was told where.
/// Used on the event loop only.
final class ReceiverStream: @unchecked Sendable {
    enum Kind {
        case audio(sampleRate: Int, channels: Int)
        case video(width: Int, height: Int, frameRate: Int)
    }

    let name: String
    let kind: Kind
    let port: UInt16
    private var receiver: DatagramReceiver?
    private(set) var packets = 0
    private(set) var frames = 0
    /// Datagrams from hosts other than the controller's, dropped unread.
    private(set) var strangers = 0
    private var ssrc: UInt32?

    // Audio
    private var decoder: OpusDecoder?
    private var jitter = AudioJitterBuffer()
    private var pcm: [Float] = []
    private var lastFrameSize = 960
    private var wav: WAVWriter?
    private var jitterTimer: EventLoop.TimerHandle?
    /// What the sound output plays: the playout buffer and the thread that empties it.
    private(set) var player: RealtimeAudioPlayer?
    /// Onset reporting (for latency measurements): silent frames seen since the last onset.
    private let reportOnsets: Bool
    private let dropVideoPacket: Int?
    private var silentFrames = 0

    // Video
    private var depacketizer = H264Depacketizer()
    private var video: RecordingFile?
    /// The window the stream is shown in, if it is.
    private(set) var window: VideoWindow?
    private var lastKeyframeRequest: ContinuousClock.Instant?
    private let requestKeyframe: () -> Void

    private let loop: EventLoop
    /// Where the stream is recorded, if it is.
    let recording: String?

    /// Opens the UDP port, taking datagrams from `sender` only, the recording, and for video the
    /// window `window` describes (a window that cannot open is said, and the stream goes on without
    /// it); `requestKeyframe` asks the controller for one.
    init(name: String, kind: Kind, host: String, sender: String, recording: String?, reportOnsets: Bool,
         audioOutput: AudioOutputChoice = .null, alsaDevice: String = "default", gain: Float = 1,
         window: VideoWindow.Setup? = nil, dropVideoPacket: Int? = nil, loop: EventLoop, requestKeyframe: @escaping () -> Void) throws {
        self.dropVideoPacket = dropVideoPacket
        self.name = name
        self.kind = kind
        self.loop = loop
        self.reportOnsets = reportOnsets
        self.requestKeyframe = requestKeyframe
        self.recording = recording
        let (fd, port) = try UDPSocket.bind(host: host)
        self.port = port
        do {
            switch kind {
            case .audio(let rate, let channels):
                decoder = try OpusDecoder(sampleRate: rate, channels: channels)
                pcm = [Float](repeating: 0, count: rate * channels * 120 / 1000)  // room for the longest Opus frame
                if let recording { wav = try WAVWriter(path: recording, sampleRate: rate, channels: channels) }
                let buffer = try AudioPlayoutBuffer(sampleRate: rate, channels: channels, readFrames: rate / 100)
                // Opened on the player's thread: opening can take seconds (see RealtimeAudioPlayer).
                let latency = Self.deviceLatency
                player = RealtimeAudioPlayer(name: name, buffer: buffer, openSink: { () throws(SoundOutputError) in
                    try audioOutput.openSink(alsaDevice: alsaDevice, sampleRate: rate, channels: channels, latency: latency)
                }, gain: gain, reportOnsets: reportOnsets)
            case .video:
                if let recording { video = try RecordingFile(path: recording) }
            }
        } catch {
            close(fd)
            throw error
        }
        do {
            receiver = try DatagramReceiver(fd: fd, loop: loop, onlyFrom: sender) { [unowned self] datagram in self.received(datagram) }
        } catch {
            _ = player?.stop()  // its thread would otherwise play the stream's silence forever
            throw error
        }
        if case .audio = kind { scheduleJitterPoll() }
        if case .video(_, _, let frameRate) = kind, let window {
            do {
                self.window = try VideoWindow(window, input: .h264(frameRate: frameRate), label: "stream \(name)",
                                          goesOn: "the stream goes on without it", loop: loop) { [unowned self] in self.askForKeyframe() }
            } catch {
                say("stream \(name): no window: \(error)")
            }
        }
    }

    /// What the sound device holds ahead of the playout buffer: two reads of 10 ms and a little.
    static let deviceLatency: Duration = .milliseconds(30)

    var lost: Int { depacketizer.lost + jitter.lost }

    private func received(_ datagram: UnsafeRawBufferPointer) {
        guard let packet = try? RTPPacket(datagram: datagram) else { return }
        // The first sender owns the stream; anything else on the port is ignored.
        if ssrc == nil { ssrc = packet.ssrc }
        guard packet.ssrc == ssrc else { return }
        packets += 1
        switch kind {
        case .audio:
            guard packet.payloadType == ReferenceProtocol.opusPayloadType else { return }
            player?.buffer.insert(packet)
            play(jitter.add(packet))
        case .video:
            guard packet.payloadType == ReferenceProtocol.h264PayloadType else { return }
            if packets == dropVideoPacket {
                say("stream \(name): dropped packet \(packets) on purpose (--drop-video-packet)")
                return
            }
            let output = depacketizer.add(packet)
            if !output.annexB.isEmpty {
                output.annexB.withUnsafeBytes { _ = video?.append($0) }
                window?.show(output.annexB)
            }
            if packet.marker && !output.annexB.isEmpty { frames += 1 }
            if output.needsKeyframe { askForKeyframe() }
        }
    }

    /// Asks the controller for a keyframe, at most every 300 ms (one is on its way meanwhile).
    private func askForKeyframe() {
        guard lastKeyframeRequest.map({ ContinuousClock.now - $0 > .milliseconds(300) }) ?? true else { return }
        lastKeyframeRequest = .now
        requestKeyframe()
    }

    private func play(_ slots: [AudioJitterBuffer.Slot]) {
        guard let decoder, case .audio(_, let channels) = kind else { return }
        for slot in slots {
            let decoded: Int
            do {
                switch slot {
                case .packet(let packet):
                    decoded = try packet.payload.withUnsafeBytes { try decoder.decode($0, into: &pcm, frameSize: pcm.count / channels) }
                    lastFrameSize = decoded
                case .lost:
                    decoded = try decoder.decode(nil, into: &pcm, frameSize: lastFrameSize)
                }
            } catch {
                say("stream \(name): \(error)")
                continue
            }
            frames += 1
            pcm.withUnsafeBufferPointer { samples in
                let frame = UnsafeBufferPointer(rebasing: samples[0..<(decoded * channels)])
                wav?.append(frame)
                if reportOnsets { detectOnset(frame) }
            }
        }
    }

    /// Prints when sound starts after silence, with the monotonic time it was decoded at.
    private func detectOnset(_ frame: UnsafeBufferPointer<Float>) {
        var energy: Float = 0
        for sample in frame { energy += sample * sample }
        let rms = (energy / Float(max(frame.count, 1))).squareRoot()
        if rms < 0.01 {
            silentFrames += 1
        } else if rms > 0.05 && silentFrames >= 5 {
            silentFrames = 0
            say("decoded onset in stream \(name) at \(SampleRing.monotonicNow())")
        }
    }

    private func scheduleJitterPoll() {
        jitterTimer = loop.schedule(after: .milliseconds(10)) { [weak self] in
            guard let self else { return }
            self.play(self.jitter.poll())
            self.scheduleJitterPoll()
        }
    }

    /// Closes the port and the recording, and stops the sound output's thread (which closes the
    /// device by itself, without the loop waiting); returns what `stream.stop` reports.
    func stop() -> ReferenceRequest.StreamStop.Summary {
        if let jitterTimer { loop.cancelTimer(jitterTimer) }
        jitterTimer = nil
        strangers = receiver?.strangers ?? strangers
        receiver?.close()
        receiver = nil
        if let player, let failure = player.stop() { say("stream \(name): its sound output failed: \(failure)") }
        wav?.finish()
        wav = nil
        video = nil
        window?.close()
        return .init(packets: packets, lost: lost, frames: frames)
    }
}
