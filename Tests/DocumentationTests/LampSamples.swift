import Foundation
import MediaDevice

// Real-time samples for the article "Real-time samples": the lamp plays PCM an app writes.

extension LampDriver: RealtimeSampleHandling {
    func startRealtimeSampleDelivery(session: MediaOutputSession) {
        guard let stream = routingManager.realtimeSampleStreams(for: session).last else { return }
        guard stream.format.isAudio else {
            routingManager.sampleStreamFailed(stream, error: MediaDeviceError(.unsupported, "the lamp shows no video"))
            return
        }
        Thread.detachNewThread {
            while stream.isOpen {
                guard stream.ring.waitForRecord(timeout: .milliseconds(100)) else { continue }
                _ = try? stream.ring.read { samples, timestamp in
                    // Encode `samples` (interleaved PCM in stream.format, written at `timestamp`)
                    // and send them to the lamp; then count what left with addConsumerOutput.
                }
            }
        }
    }

    func stopRealtimeSampleDelivery(session: MediaOutputSession) {
        // The reading thread sees isOpen turn false and ends; release the encoder here.
    }

    func outputLatency(for stream: RealtimeSampleStream) -> Double? {
        0.040
    }
}
