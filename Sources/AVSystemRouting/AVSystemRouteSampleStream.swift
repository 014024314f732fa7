import Foundation
import MediaDevice
import MediaRouteIPC
import MediaRouteWire
import Synchronization

/// A stream of real-time samples to a route's device (it must have `realtimeAudioStreaming` or
/// `realtimeVideoStreaming`): the app writes interleaved PCM or I420 frames into a shared-memory
/// ring, and the device's driver encodes and sends them. Writing never blocks: a full ring (a device
/// slower than the app) drops the record and counts it in `statistics.overruns`.
public final class AVSystemRouteSampleStream: Sendable {
    public let identifier: String
    public let route: AVSystemRoute
    /// Seconds from a `write` to its sound leaving the device, as the driver estimates it (a
    /// Bluetooth device reports its own delay); nil when the driver does not say. Schedule
    /// against it to keep pictures in step with the sound.
    public let outputLatency: Double?
    let ring: SampleRing
    private let daemon: DaemonConnection
    private let ended = Mutex<AVSystemRoutingError?>(nil)

    init(identifier: String, route: AVSystemRoute, ring: SampleRing, daemon: DaemonConnection, outputLatency: Double? = nil) {
        self.identifier = identifier
        self.route = route
        self.ring = ring
        self.daemon = daemon
        self.outputLatency = outputLatency
    }

    public var format: SampleFormat { ring.format }
    /// Written, read, dropped (overruns), starved (underruns), buffered, and what the driver sent on.
    public var statistics: SampleRing.Statistics { ring.statistics }
    /// Bytes the ring holds: a record is at most half of it.
    public var capacity: Int { ring.capacity }
    /// Why the stream ended, once it has (the route went away, the driver stopped, `stop()`).
    public var endReason: AVSystemRoutingError? { ended.withLock { $0 } }

    /// Writes interleaved Float32 samples (whole frames) stamped `timestamp` (CLOCK_MONOTONIC ns).
    /// True if written, false if the ring was full and they were dropped.
    public func write(_ samples: UnsafeBufferPointer<Float>, timestamp: UInt64 = SampleRing.monotonicNow()) throws -> Bool {
        guard case .audio(_, _, .float32) = format else { throw mismatch("Float32 samples") }
        return try write(UnsafeRawBufferPointer(samples), timestamp: timestamp)
    }

    /// Writes interleaved Int16 samples (whole frames).
    public func write(_ samples: UnsafeBufferPointer<Int16>, timestamp: UInt64 = SampleRing.monotonicNow()) throws -> Bool {
        guard case .audio(_, _, .int16) = format else { throw mismatch("Int16 samples") }
        return try write(UnsafeRawBufferPointer(samples), timestamp: timestamp)
    }

    /// Writes one I420 frame: the Y plane, then U, then V, tightly packed.
    public func write(frame: UnsafeRawBufferPointer, timestamp: UInt64 = SampleRing.monotonicNow()) throws -> Bool {
        guard case .video = format else { throw mismatch("a video frame") }
        guard frame.count == format.frameBytes else {
            throw AVSystemRoutingError(.invalidArgument, "an I420 frame for \(format) is \(format.frameBytes) bytes, not \(frame.count)")
        }
        return try write(frame, timestamp: timestamp)
    }

    private func write(_ bytes: UnsafeRawBufferPointer, timestamp: UInt64) throws -> Bool {
        if let endReason { throw endReason }
        if format.isAudio, bytes.count % format.frameBytes != 0 {
            throw AVSystemRoutingError(.invalidArgument, "write whole audio frames: \(bytes.count) bytes is not a multiple of \(format.frameBytes)")
        }
        switch try ring.write(bytes, timestamp: timestamp) {
        case .written: return true
        case .full: return false
        case .consumerClosed:
            throw endReason ?? AVSystemRoutingError(.sessionEnded, "the driver stopped reading stream \(identifier)")
        }
    }

    private func mismatch(_ what: String) -> AVSystemRoutingError {
        AVSystemRoutingError(.invalidArgument, "stream \(identifier) carries \(format); it takes no \(what)")
    }

    /// Ends the stream: the driver stops reading and sending.
    public func stop() async throws {
        guard end(AVSystemRoutingError(.sessionEnded, "the stream was stopped")) else { return }
        ring.closeProducer()
        do {
            try await daemon.call(Streams.Stop(stream: identifier))
        } catch let error as MediaDeviceError where error.code == .deviceNotFound {
            // Already ended with its route.
        }
        route.registry.remove(self)
    }

    /// Marks the stream ended; false if it already was.
    @discardableResult
    func end(_ error: AVSystemRoutingError) -> Bool {
        ended.withLock { current in
            guard current == nil else { return false }
            current = error
            return true
        }
    }
}

extension AVSystemRoute {
    /// Opens a stream of real-time audio (48 kHz stereo Float32 unless said otherwise) to the
    /// device. Fails, with the reason, on a device without `realtimeAudioStreaming`.
    public func startAudioStream(format: SampleFormat = .defaultAudio) async throws -> AVSystemRouteSampleStream {
        guard format.isAudio else { throw AVSystemRoutingError(.invalidArgument, "startAudioStream needs an audio format, not \(format)") }
        return try await startStream(format)
    }

    /// Opens a stream of I420 video frames (the stand-in for screen mirroring) to the device.
    public func startVideoStream(width: Int, height: Int, frameRate: Int) async throws -> AVSystemRouteSampleStream {
        try await startStream(.video(width: width, height: height, frameRate: frameRate))
    }

    private func startStream(_ format: SampleFormat) async throws -> AVSystemRouteSampleStream {
        guard isActive else { throw AVSystemRoutingError(.routeInactive, "the route to \(routeDisplayName) is no longer active") }
        let needed: MediaOutputDevice.Capabilities = format.isAudio ? .realtimeAudioStreaming : .realtimeVideoStreaming
        guard device.capabilities.contains(needed) else {
            throw MediaDeviceError(.unsupported, "\(routeDisplayName) cannot take real-time \(format.isAudio ? "audio" : "video") (its capabilities: \(device.capabilities.names.joined(separator: ", ")))")
        }
        let (opened, descriptors) = try await daemon.callReceivingDescriptors(Streams.Start(route: identifier, format: format))
        let id = opened.stream
        let ring: SampleRing
        do {
            ring = try SampleRing(descriptors: descriptors)
        } catch {
            // The daemon and the driver opened it: end it there too.
            _ = try? await daemon.call(Streams.Stop(stream: id))
            throw AVSystemRoutingError(.protocolError, "the stream's ring is unusable: \(error)")
        }
        let stream = AVSystemRouteSampleStream(identifier: id, route: self, ring: ring, daemon: daemon, outputLatency: opened.latency)
        registry.add(stream)
        return stream
    }
}
