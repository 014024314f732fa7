import Glibc
import MediaRouteIPC

/// Carries the raw frames one ffmpeg child decodes (on a pipe) to a window, whole frames only, each
/// held for what `delay` says of it when it arrives (given its number, from 0): ffmpeg writes a
/// frame when it has decoded it, which is not when its sound is heard (that has the device's buffer
/// to go through, and the decoders' delays differ), so the picture waits for the sound (frames keep
/// their order). A child killed in the middle of a frame leaves a part that is dropped, so the window,
/// which outlives the child (a pause, a seek), never sees frames cut out of step. Loop thread only.
final class FrameRelay: @unchecked Sendable {  // used on the event loop only, which the compiler cannot see
    private let frameBytes: Int
    private let delay: (Int) -> Duration
    private let loop: EventLoop
    private let deliver: ([UInt8]) -> Void
    private var watcher: DescriptorWatcher?
    private var frame: [UInt8]
    private var filled = 0
    /// Frames held, oldest first, with when each is due.
    private var held: [(frame: [UInt8], due: ContinuousClock.Instant)] = []
    private var timer: EventLoop.TimerHandle?
    /// Frames read whole.
    private(set) var frames = 0

    /// Reads `fd` (the pipe's read end, closed by `cancel()` or at its end) on `loop`.
    init(fd: Int32, frameBytes: Int, delay: @escaping (Int) -> Duration, loop: EventLoop, deliver: @escaping ([UInt8]) -> Void) throws(IPCSystemError) {
        self.frameBytes = frameBytes
        self.delay = delay
        self.loop = loop
        self.deliver = deliver
        frame = [UInt8](repeating: 0, count: frameBytes)
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        watcher = try DescriptorWatcher(fd: fd, loop: loop) { [weak self] _ in self?.readable() }
    }

    /// Stops reading, closes the pipe, and drops the frames held (their sound is cut too).
    func cancel() {
        watcher?.cancel()
        watcher = nil
        held.removeAll()
        if let timer { loop.cancelTimer(timer) }
        timer = nil
    }

    private func readable() {
        guard let watcher else { return }
        // A bounded number of reads a wake-up: other descriptors on the loop get their turn.
        for _ in 0..<8 {
            let count = frame.withUnsafeMutableBytes { Glibc.read(watcher.fd, $0.baseAddress! + filled, frameBytes - filled) }
            if count < 0 && errno == EINTR { continue }
            if count < 0 && errno == EAGAIN { return }
            guard count > 0 else {
                // The end (or a broken pipe): a part-frame left is dropped.
                watcher.cancel()
                self.watcher = nil
                return
            }
            filled += count
            guard filled == frameBytes else { continue }
            filled = 0
            hold(frame, number: frames)
            frames += 1
        }
    }

    private func hold(_ whole: [UInt8], number: Int) {
        let wait = delay(number)
        guard wait > .zero || !held.isEmpty else { return deliver(whole) }
        held.append((whole, max(.now + wait, held.last?.due ?? .now)))
        if timer == nil { scheduleNext() }
    }

    private func scheduleNext() {
        guard let first = held.first else { return }
        timer = loop.schedule(after: max(.zero, first.due - .now)) { [weak self] in
            guard let self else { return }
            timer = nil
            let now = ContinuousClock.now
            while let first = held.first, first.due <= now {
                held.removeFirst()
                deliver(first.frame)
            }
            scheduleNext()
        }
    }
}
