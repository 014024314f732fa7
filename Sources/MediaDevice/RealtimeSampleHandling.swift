import MediaRouteIPC
import MediaRouteWire
import Synchronization

/// A driver whose devices take samples rather than URLs: devices with `realtimeAudioStreaming` or
/// `realtimeVideoStreaming`. Apps write PCM or I420 frames into shared-memory rings the supervisor
/// makes; the driver reads them (`MediaDeviceRoutingManager.realtimeSampleStreams(for:)`), encodes
/// them, and sends them to its device. Samples never pass through the supervisor.
@MainActor
public protocol RealtimeSampleHandling: MediaDeviceExtension {
    /// A stream of samples for `session` opened; it is the newest in `realtimeSampleStreams(for:)`.
    /// Called once per stream (an app may open audio, then video). Read it on a thread of your
    /// own: `SampleRing.waitForRecord(timeout:)` blocks.
    func startRealtimeSampleDelivery(session: MediaOutputSession)
    /// A stream of `session` closed (it has left `realtimeSampleStreams(for:)`): stop reading it,
    /// release its encoder.
    func stopRealtimeSampleDelivery(session: MediaOutputSession)
    /// Seconds from a sample leaving the ring to its sound leaving the device, if you know it
    /// (a Bluetooth device reports its own delay): apps schedule against it. Asked right after
    /// `startRealtimeSampleDelivery`; the default says nothing.
    func outputLatency(for stream: RealtimeSampleStream) -> Double?
}

extension RealtimeSampleHandling {
    public func outputLatency(for stream: RealtimeSampleStream) -> Double? { nil }
}

/// One stream of samples an app sends to a session's device: the ring the driver consumes.
public final class RealtimeSampleStream: Sendable {
    public let identifier: String
    public let session: MediaOutputSession
    /// The consumer's end of the ring (the driver's): read records, count underruns and output.
    public let ring: SampleRing
    private let open = Atomic<Bool>(true)

    public var format: SampleFormat { ring.format }
    /// False once the system closed the stream: a reading thread should stop.
    public var isOpen: Bool { open.load(ordering: .acquiring) }

    init(identifier: String, session: MediaOutputSession, ring: SampleRing) {
        self.identifier = identifier
        self.session = session
        self.ring = ring
    }

    func close() {
        open.store(false, ordering: .releasing)
        ring.closeConsumer()
    }
}

extension MediaDeviceRoutingManager {
    /// A stream cannot go on (the device refused it, the encoder failed): the app writing it is
    /// told why, and its writes fail from then on. The stream then closes here too, as if stopped
    /// (`stopRealtimeSampleDelivery`). Callable from any thread.
    public func sampleStreamFailed(_ stream: RealtimeSampleStream, error: any Error) {
        post(FromDriver.StreamFailed(session: stream.session.id, stream: stream.identifier, error: Self.deviceError(error, default: .sessionFailed)))
        let identifier = stream.identifier
        Task { @MainActor in DriverRuntime.closeStreams { $0.identifier == identifier } }
    }

    /// The sample streams open for `session`, oldest first.
    @MainActor
    public func realtimeSampleStreams(for session: MediaOutputSession) -> [RealtimeSampleStream] {
        DriverRuntime.sampleStreams.filter { $0.session == session }
    }
}
