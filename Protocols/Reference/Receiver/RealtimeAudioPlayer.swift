import Foundation
import MediaCodecs
import MediaRouteIPC
import SoundOutput
import Synchronization

/// Plays one real-time audio stream: a thread of its own opens the sound output, then takes 10 ms
/// at a time out of the stream's playout buffer, at the pace the sound output takes them (the
/// card's clock, or the null output's), applies the receiver's volume, and writes them out. The
/// device is opened and closed on that thread only: both can block for seconds (a PipeWire server
/// whose session manager is gone, a stalled device draining), which the event loop must not.
final class RealtimeAudioPlayer: Sendable {
    let name: String
    let buffer: AudioPlayoutBuffer
    private let reportOnsets: Bool
    private let running = Atomic<Bool>(true)
    /// The volume as a Float's bits (0 when muted).
    private let gain: Atomic<UInt32>
    private let end = PlayerThreadEnd()
    private let failure = Mutex<String?>(nil)
    private let deviceUnderrunCount = Atomic<Int>(0)

    /// Starts the thread, which opens its sink with `openSink`; a sink that cannot open is said on
    /// the console and returned by `stop()`, as any failure of the output.
    init(name: String, buffer: AudioPlayoutBuffer, openSink: @escaping @Sendable () throws(SoundOutputError) -> any SoundSink,
         gain: Float, reportOnsets: Bool) {
        self.name = name
        self.buffer = buffer
        self.reportOnsets = reportOnsets
        self.gain = Atomic(gain.bitPattern)
        Thread.detachNewThread { [self] in run(openSink) }
    }

    func setGain(_ value: Float) { gain.store(value.bitPattern, ordering: .relaxed) }

    /// Times the sound device ran dry (the thread feeding it was late), and was restarted.
    var deviceUnderruns: Int { deviceUnderrunCount.load(ordering: .relaxed) }

    /// Stops playing without waiting: the thread plays what the device holds, closes it and ends
    /// by itself (`ended()`). Returns how the output failed, if it has by now (a later failure is
    /// said by the thread).
    func stop() -> String? {
        running.store(false, ordering: .relaxed)
        return failure.withLock { $0 }
    }

    /// Returns once the thread has closed the device and ended.
    func ended() async { await end.wait() }

    var hasEnded: Bool { end.hasEnded }

    private func run(_ openSink: () throws(SoundOutputError) -> any SoundSink) {
        defer { end.markEnded() }
        let sink: any SoundSink
        do {
            sink = try openSink()
        } catch {
            return failed(error)
        }
        // Stopped while the device opened: nothing to play.
        guard running.load(ordering: .relaxed) else { return sink.close(draining: false) }
        play(sink)
        sink.close(draining: true)
    }

    private func failed(_ error: SoundOutputError) {
        say("stream \(name): \(error)")
        failure.withLock { $0 = "\(error)" }
    }

    private func play(_ sink: any SoundSink) {
        var period = [Float](repeating: 0, count: buffer.readFrames * buffer.channels)
        var silentPeriods = 0
        var periods = 0
        do {
            try startDevice(sink, silence: period)
        } catch {
            return failed(error)
        }
        while running.load(ordering: .relaxed) {
            _ = period.withUnsafeMutableBufferPointer { buffer.read(into: $0) }
            let left = SampleRing.monotonicNow()
            let volume = Float(bitPattern: gain.load(ordering: .relaxed))
            if volume != 1 { for index in period.indices { period[index] *= volume } }
            if reportOnsets { detectOnset(period, silentPeriods: &silentPeriods, at: left, sink) }
            do {
                try period.withUnsafeBufferPointer { samples throws(SoundOutputError) in try sink.write(samples) }
                deviceUnderrunCount.store(sink.deviceUnderruns, ordering: .relaxed)
                let took = SampleRing.monotonicNow() - left
                if took > 50_000_000 {
                    say("stream \(name): the sound output took \(took / 1_000_000) ms to take 10 ms, \(String(format: "%.2f", Double(periods) / 100)) s into the stream (it stalled)")
                }
                periods += 1
            } catch {
                return failed(error)
            }
        }
    }

    /// Writes silence until the device takes it at its pace (two writes of 10 ms taking 5-20 ms
    /// each), for at most a second: a sound server takes time to start a stream (PulseAudio's ALSA
    /// device blocks 0.1-0.35 s once its buffer is full), and the stream's audio must not wait in
    /// the playout buffer meanwhile. What arrives during it is a backlog the buffer skips.
    private func startDevice(_ sink: any SoundSink, silence: [Float]) throws(SoundOutputError) {
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
    private func detectOnset(_ period: [Float], silentPeriods: inout Int, at time: UInt64, _ sink: any SoundSink) {
        var energy: Float = 0
        for sample in period { energy += sample * sample }
        let rms = (energy / Float(max(period.count, 1))).squareRoot()
        if rms < 0.01 {
            silentPeriods += 1
        } else if rms > 0.05 && silentPeriods >= 10 {
            silentPeriods = 0
            let delay = sink.delay
            say("played onset in stream \(name) at \(time), device delay \(delay.components.attoseconds / 1_000_000_000 + delay.components.seconds * 1_000_000_000) ns")
        }
    }
}
