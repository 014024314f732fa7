import Foundation
import MediaCodecs
import MediaDevice
import MediaRouteIPC
import ReferenceProtocol
import RTP
import Synchronization

/// Reads one sample stream's ring on a thread of its own, encodes it (Opus for audio, H.264 for
/// video), and sends it to the receiver as RTP over UDP (PROTOCOL.md §4.1).
final class SampleSender: @unchecked Sendable {
    /// Encoder settings, from the driver's environment (its manifest's `environment`).
    struct Settings: Sendable {
        var opus = OpusEncoder.Settings()
        var x264Preset = "veryfast"
        var x264Threads = 1
        var x264BitrateKbps: Int?

        static var fromEnvironment: Settings {
            let environment = ProcessInfo.processInfo.environment
            var settings = Settings()
            if let bitrate = environment["MEDIAROUTE_OPUS_BITRATE"].flatMap(Int.init) { settings.opus.bitrate = bitrate }
            if let milliseconds = environment["MEDIAROUTE_OPUS_FRAME_MS"].flatMap(Double.init) { settings.opus.frameMicroseconds = Int(milliseconds * 1000) }
            if let complexity = environment["MEDIAROUTE_OPUS_COMPLEXITY"].flatMap(Int.init) { settings.opus.complexity = complexity }
            if let preset = environment["MEDIAROUTE_X264_PRESET"] { settings.x264Preset = preset }
            if let threads = environment["MEDIAROUTE_X264_THREADS"].flatMap(Int.init) { settings.x264Threads = threads }
            settings.x264BitrateKbps = environment["MEDIAROUTE_X264_BITRATE_KBPS"].flatMap(Int.init)
            return settings
        }
    }

    let stream: RealtimeSampleStream
    private let socket: Int32
    private let settings: Settings
    private let stopping = Atomic<Bool>(false)
    private let keyframeWanted = Atomic<Bool>(false)
    private let onFailure: @Sendable (any Error) -> Void
    private var sequence = UInt16.random(in: .min ... .max)
    private var timestamp = UInt32.random(in: .min ... .max)
    private let ssrc = UInt32.random(in: .min ... .max)
    private var packet = [UInt8](repeating: 0, count: RTPPacket.headerSize + OpusEncoder.maximumPacketSize)

    init(stream: RealtimeSampleStream, host: String, port: UInt16, settings: Settings, onFailure: @escaping @Sendable (any Error) -> Void) throws {
        self.stream = stream
        self.settings = settings
        self.onFailure = onFailure
        socket = try UDPSocket.connect(host: host, port: port)
    }

    deinit { close(socket) }

    func start() {
        Thread.detachNewThread { [self] in
            do {
                switch stream.format {
                case .audio: try sendAudio()
                case .video: try sendVideo()
                }
            } catch {
                if !stopping.load(ordering: .relaxed) { onFailure(error) }
            }
        }
    }

    /// The receiver lost data: the next video frame is a keyframe.
    func requestKeyframe() { keyframeWanted.store(true, ordering: .relaxed) }

    /// Stops after the frame in hand (the thread notices within 100 ms).
    func finish() { stopping.store(true, ordering: .relaxed) }

    private var running: Bool { !stopping.load(ordering: .relaxed) && stream.isOpen }

    // MARK: Audio

    private func sendAudio() throws {
        guard case .audio(let rate, let channels, let type) = stream.format else { return }
        var opus = settings.opus
        opus.sampleRate = rate
        opus.channels = channels
        let encoder = try OpusEncoder(opus)
        let frameBytes = encoder.settings.frameSize * channels * type.bytes
        let ticks = UInt32(encoder.settings.frameMicroseconds * 48 / 1000)  // RFC 7587: a 48 kHz clock
        var pending = [UInt8]()
        pending.reserveCapacity(frameBytes * 4)
        var started = false
        let patience = Duration.microseconds(encoder.settings.frameMicroseconds * 2)
        while running {
            guard try stream.ring.read({ record, _ in pending.append(contentsOf: record) }) else {
                // Nothing within two frame durations of a started stream: the device goes without.
                if !stream.ring.waitForRecord(timeout: patience), started, !stream.ring.producerClosed { stream.ring.noteUnderrun() }
                continue
            }
            started = true
            var offset = 0
            while pending.count - offset >= frameBytes {
                let size = try pending.withUnsafeBytes { samples in
                    try packet.withUnsafeMutableBytes { out in
                        let body = UnsafeMutableRawBufferPointer(rebasing: out[RTPPacket.headerSize...])
                        let start = samples.baseAddress! + offset
                        return type == .float32
                            ? try encoder.encode(start.assumingMemoryBound(to: Float.self), into: body)
                            : try encoder.encode(start.assumingMemoryBound(to: Int16.self), into: body)
                    }
                }
                send(payloadType: ReferenceProtocol.opusPayloadType, marker: false, payloadSize: size)
                timestamp &+= ticks
                offset += frameBytes
            }
            pending.removeFirst(offset)
        }
    }

    // MARK: Video

    private func sendVideo() throws {
        guard case .video(let width, let height, let frameRate) = stream.format else { return }
        var h264 = H264Encoder.Settings(width: width, height: height, frameRate: frameRate)
        h264.preset = settings.x264Preset
        h264.threads = settings.x264Threads
        h264.bitrateKbps = settings.x264BitrateKbps
        let encoder = try H264Encoder(h264)
        let packetizer = H264Packetizer()
        packet = [UInt8](repeating: 0, count: RTPPacket.headerSize + packetizer.maximumPayload)
        var frame: Int64 = 0
        var payloads: [[UInt8]] = []
        while running {
            var failure: (any Error)?
            let got = try stream.ring.read { record, _ in
                if keyframeWanted.exchange(false, ordering: .relaxed) { encoder.requestKeyframe() }
                payloads.removeAll(keepingCapacity: true)
                do {
                    try encoder.encode(record, pts: frame) { nal in packetizer.payloads(for: nal.payload) { payloads.append(Array($0)) } }
                } catch {
                    failure = error
                }
            }
            if let failure { throw failure }
            guard got else {
                _ = stream.ring.waitForRecord(timeout: .milliseconds(100))
                continue
            }
            // The marker bit ends the frame (RFC 6184); every packet of a frame has its timestamp.
            for (index, payload) in payloads.enumerated() {
                packet.withUnsafeMutableBytes { out in out.baseAddress!.advanced(by: RTPPacket.headerSize).copyMemory(from: payload, byteCount: payload.count) }
                send(payloadType: ReferenceProtocol.h264PayloadType, marker: index == payloads.count - 1, payloadSize: payload.count)
            }
            frame += 1
            timestamp &+= UInt32(90_000 / frameRate)
        }
    }

    private func send(payloadType: UInt8, marker: Bool, payloadSize: Int) {
        packet.withUnsafeMutableBytes { out in
            RTPPacket.writeHeader(into: out, marker: marker, payloadType: payloadType, sequence: sequence, timestamp: timestamp, ssrc: ssrc)
            if UDPSocket.send(socket, UnsafeRawBufferPointer(rebasing: out[0..<(RTPPacket.headerSize + payloadSize)])) {
                stream.ring.addConsumerOutput(RTPPacket.headerSize + payloadSize)
            }
        }
        sequence &+= 1
    }
}
