import Foundation
import SoundOutput
import Testing
import TestSupport

/// ALSA devices that exist without a sound card, through the real libasound.
@Suite("Sound output: ALSA devices without a card", .onAThreadOfItsOwn)
struct ALSAPlaybackTests {
    @Test func aDeviceWithoutAClockIsPacedByTheSystemClock() throws {
        // ALSA's `null` device takes samples as fast as they come.
        let sink = try ALSAPlayback(device: "null", sampleRate: 48_000, channels: 2, latency: .milliseconds(30))
        defer { sink.close(draining: false) }
        let period = [Float](repeating: 0, count: 480 * 2)
        let start = ContinuousClock.now
        for _ in 0..<50 { try period.withUnsafeBufferPointer { try sink.write($0) } }
        let elapsed = ContinuousClock.now - start
        #expect(sink.isPacedBySystemClock)
        // 50 × 10 ms: all but what it took before it was found out (twice its buffer and 50 ms),
        // each write returning when a card would have taken it.
        #expect(elapsed >= .milliseconds(300) && elapsed < .milliseconds(1000), "\(elapsed)")
    }

    @Test func aDeviceThatIsNotThereSaysWhatIsMissing() {
        #expect {
            _ = try ALSAPlayback(device: "mediaroute_no_such_device", sampleRate: 48_000, channels: 2, latency: .milliseconds(30))
        } throws: { error in
            "\(error)".contains("ALSA cannot open the playback device \"mediaroute_no_such_device\"") && "\(error)".contains("aplay -L")
        }
    }
}
