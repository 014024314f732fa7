import Foundation
import SoundOutput
import Synchronization

/// Plays what an ffmpeg child decodes (48 kHz stereo Float32 on a pipe) on the receiver's sound
/// output, at the receiver's volume: a thread of its own opens the sound output, reads the pipe
/// and writes to the sink, whose blocking writes pace ffmpeg through the pipe. At the end of the
/// pipe it plays what the device still holds; after `cut()` it drops it (a pause or a seek is heard
/// at once). The device is opened and closed on that thread only: both can block for seconds,
/// which the event loop must not.
final class PCMPipePlayer: Sendable {
    private let gain: Atomic<UInt32>
    private let cutting = Atomic<Bool>(false)
    /// After the last write: how much sound had been heard (all written less what the device still
    /// held, as the sink says), how much was written, and when.
    private let progress = Mutex<(heard: Duration, written: Duration, at: ContinuousClock.Instant)?>(nil)
    private let fd: Int32
    private let end = PlayerThreadEnd()
    private let soundFailure = Mutex<String?>(nil)

    /// Takes `fd` (the pipe's read end, closed when done); the thread opens its sink with
    /// `openSink`, and calls `onFailure` (on the thread) when the sound output cannot open or fails.
    init(fd: Int32, gain: Float, openSink: @escaping @Sendable () throws(SoundOutputError) -> any SoundSink,
         onFailure: @escaping @Sendable () -> Void) {
        self.gain = Atomic(gain.bitPattern)
        self.fd = fd
        Thread.detachNewThread { [self] in
            run(openSink)
            if failure != nil { onFailure() }
        }
    }

    func setGain(_ value: Float) { gain.store(value.bitPattern, ordering: .relaxed) }

    /// How much of the sound has been heard by now (from the first sample): what the device said at
    /// the last write, moved on by the time since (up to all that was written). Nil before any.
    var heard: Duration? {
        progress.withLock { $0 }.map { last in min(last.heard + (ContinuousClock.now - last.at), last.written) }
    }

    /// Drops what is still to be played once the pipe ends (the caller kills ffmpeg, which ends it).
    func cut() { cutting.store(true, ordering: .relaxed) }

    /// Why the sound output could not open or play, once it could not.
    var failure: String? { soundFailure.withLock { $0 } }

    /// Returns once the thread has ended: what ffmpeg decoded has been played (or cut).
    func finished() async { await end.wait() }

    private func run(_ openSink: () throws(SoundOutputError) -> any SoundSink) {
        defer {
            close(fd)
            end.markEnded()
        }
        let sink: any SoundSink
        do {
            sink = try openSink()
        } catch {
            return failed(error)
        }
        play(sink)
        sink.close(draining: !cutting.load(ordering: .relaxed))
    }

    private func failed(_ error: SoundOutputError) {
        say("URL playback: \(error)")
        soundFailure.withLock { $0 = "\(error)" }
    }

    private func play(_ sink: any SoundSink) {
        let frame = sink.channels * MemoryLayout<Float>.size
        var samples = [Float](repeating: 0, count: 480 * sink.channels)
        var filled = 0  // bytes in `samples`
        var written = 0  // frames
        while !cutting.load(ordering: .relaxed) {
            let count = samples.withUnsafeMutableBytes { read(fd, $0.baseAddress! + filled, $0.count - filled) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            filled += count
            let whole = filled / frame * frame
            guard whole > 0 else { continue }
            let volume = Float(bitPattern: gain.load(ordering: .relaxed))
            let values = whole / MemoryLayout<Float>.size
            if volume != 1 { for index in 0..<values { samples[index] *= volume } }
            do {
                try samples.withUnsafeBufferPointer { all throws(SoundOutputError) in try sink.write(UnsafeBufferPointer(rebasing: all[0..<values])) }
                written += values / sink.channels
                let total = Duration.microseconds(written * 1_000_000 / sink.sampleRate)
                let update = (heard: max(.zero, total - sink.delay), written: total, at: ContinuousClock.now)
                progress.withLock { $0 = update }
            } catch {
                return failed(error)
            }
            // A partial frame left over moves to the front.
            samples.withUnsafeMutableBytes { bytes in
                if filled > whole { bytes.baseAddress!.copyMemory(from: bytes.baseAddress! + whole, byteCount: filled - whole) }
            }
            filled -= whole
        }
    }
}
