import Foundation
import MediaCodecs
import MediaDevice
import MediaRouteIPC
import ReferenceProtocol
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

    private func send(_ packet: UnsafeRawBufferPointer) {
        if UDPSocket.send(socket, packet) { stream.ring.addConsumerOutput(packet.count) }
    }

    private func sendAudio() throws {
        guard case .audio(let rate, let channels, let type) = stream.format else { return }
        var opus = settings.opus
        opus.sampleRate = rate
        opus.channels = channels
        let encoder = try OpusRTPEncoder(opus, sampleType: type == .float32 ? .float32 : .int16, payloadType: ReferenceProtocol.opusPayloadType)
        var started = false
        let patience = Duration.microseconds(opus.frameMicroseconds * 2)
        while running {
            var failure: (any Error)?
            let got = try stream.ring.read { record, _ in
                do { try encoder.add(record, send: send) } catch { failure = error }
            }
            if let failure { throw failure }
            if got {
                started = true
            } else if stream.ring.producerClosed {
                return  // the app ended the stream and everything it wrote is sent
            } else if !stream.ring.waitForRecord(timeout: patience), started, !stream.ring.producerClosed {
                stream.ring.noteUnderrun()  // nothing within two frame durations of a started stream: the device goes without
            }
        }
    }

    private func sendVideo() throws {
        guard case .video(let width, let height, let frameRate) = stream.format else { return }
        var h264 = H264Encoder.Settings(width: width, height: height, frameRate: frameRate)
        h264.preset = settings.x264Preset
        h264.threads = settings.x264Threads
        h264.bitrateKbps = settings.x264BitrateKbps
        let encoder = try H264RTPEncoder(h264, payloadType: ReferenceProtocol.h264PayloadType)
        while running {
            var failure: (any Error)?
            let got = try stream.ring.read { record, _ in
                if keyframeWanted.exchange(false, ordering: .relaxed) { encoder.encoder.requestKeyframe() }
                do { try encoder.add(record, send: send) } catch { failure = error }
            }
            if let failure { throw failure }
            if !got {
                if stream.ring.producerClosed { return }  // the app ended the stream and everything it wrote is sent
                _ = stream.ring.waitForRecord(timeout: .milliseconds(100))
            }
        }
    }
}
