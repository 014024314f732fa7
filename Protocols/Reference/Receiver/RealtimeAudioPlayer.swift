import Foundation
import MediaCodecs
import MediaRouteIPC
import SoundOutput
import Synchronization

/// Plays one real-time audio stream: a thread of its own takes 10 ms at a time out of the stream's
/// playout buffer, at the pace the sound output takes them (the card's clock, or the null output's),
/// applies the receiver's volume, and writes them out.
final class RealtimeAudioPlayer: @unchecked Sendable {  // the sink (not Sendable: a device handle) is touched only by the player thread, after init; the rest is atomics, a lock and the Sendable buffer
    let name: String
    let buffer: AudioPlayoutBuffer
    private let sink: any SoundSink
    private let reportOnsets: Bool
    private let running = Atomic<Bool>(true)
    /// The volume as a Float's bits (0 when muted).
    private let gain: Atomic<UInt32>
    private let ended = DispatchSemaphore(value: 0)
    private let failure = Mutex<String?>(nil)
    private let deviceUnderrunCount = Atomic<Int>(0)

    init(name: String, buffer: AudioPlayoutBuffer, sink: any SoundSink, gain: Float, reportOnsets: Bool) {
        self.name = name
        self.buffer = buffer
        self.sink = sink
        self.reportOnsets = reportOnsets
        self.gain = Atomic(gain.bitPattern)
        Thread.detachNewThread { [self] in play() }
    }

    func setGain(_ value: Float) { gain.store(value.bitPattern, ordering: .relaxed) }

    /// Times the sound device ran dry (the thread feeding it was late), and was restarted.
    var deviceUnderruns: Int { deviceUnderrunCount.load(ordering: .relaxed) }

    /// Stops playing (what the device holds still plays) and waits for the thread to end.
    func stop() -> String? {
        running.store(false, ordering: .relaxed)
        ended.wait()
        return failure.withLock { $0 }
    }

    private func play() {
        defer {
            sink.close(draining: true)
            ended.signal()
        }
        var period = [Float](repeating: 0, count: buffer.readFrames * buffer.channels)
        var silentPeriods = 0
        var periods = 0
        do {
            try startDevice(silence: period)
        } catch {
            say("stream \(name): \(error)")
            failure.withLock { $0 = "\(error)" }
            return
        }
        while running.load(ordering: .relaxed) {
            _ = period.withUnsafeMutableBufferPointer { buffer.read(into: $0) }
            let left = SampleRing.monotonicNow()
            let volume = Float(bitPattern: gain.load(ordering: .relaxed))
            if volume != 1 { for index in period.indices { period[index] *= volume } }
            if reportOnsets { detectOnset(period, silentPeriods: &silentPeriods, at: left) }
            do {
                try period.withUnsafeBufferPointer { try sink.write($0) }
                deviceUnderrunCount.store(sink.deviceUnderruns, ordering: .relaxed)
                let took = SampleRing.monotonicNow() - left
                if took > 50_000_000 {
                    say("stream \(name): the sound output took \(took / 1_000_000) ms to take 10 ms, \(String(format: "%.2f", Double(periods) / 100)) s into the stream (it stalled)")
                }
                periods += 1
            } catch {
                say("stream \(name): \(error)")
                failure.withLock { $0 = "\(error)" }
                return
            }
        }
    }

    /// Writes silence until the device takes it at its pace (two writes of 10 ms taking 5-20 ms
    /// each), for at most a second: a sound server takes time to start a stream (PulseAudio's ALSA
    /// device blocks 0.1-0.35 s once its buffer is full), and the stream's audio must not wait in
    /// the playout buffer meanwhile. What arrives during it is a backlog the buffer skips.
    private func startDevice(silence: [Float]) throws(SoundOutputError) {
        let deadline = SampleRing.monotonicNow() + 1_000_000_000
        var steady = 0
        while steady < 2, running.load(ordering: .relaxed), SampleRing.monotonicNow() < deadline {
            let before = SampleRing.monotonicNow()
            try silence.withUnsafeBufferPointer { samples throws(SoundOutputError) in try sink.write(samples) }
            let took = SampleRing.monotonicNow() - before
            steady = (5_000_000...20_000_000).contains(took) ? steady + 1 : 0
        }
    }

    /// Prints when sound leaves the playout buffer after 100 ms of silence, with the monotonic time.
    private func detectOnset(_ period: [Float], silentPeriods: inout Int, at time: UInt64) {
        var energy: Float = 0
        for sample in period { energy += sample * sample }
        let rms = (energy / Float(max(period.count, 1))).squareRoot()
        if rms < 0.01 {
            silentPeriods += 1
        } else if rms > 0.05 && silentPeriods >= 10 {
            silentPeriods = 0
            say("played onset in stream \(name) at \(time), device delay \(sink.delay.components.attoseconds / 1_000_000_000 + sink.delay.components.seconds * 1_000_000_000) ns")
        }
    }
}
