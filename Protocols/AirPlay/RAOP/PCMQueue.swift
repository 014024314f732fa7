import Dispatch
import PCMPlayback
import Synchronization

/// PCM a caller hands over in pieces (`RAOPSender.send(pcm:)`) for the sending thread to read: a
/// FIFO of at most about `capacity` samples, whose `append` waits while it is full, so a caller
/// faster than real time is held to it. Callers waiting for room go in the order they came; all
/// are let go when the queue is finished (the stream ended, whatever the reason).
final class PCMQueue: PCMSource {
    let format = PCMFormat(sampleRate: ALACFrame.sampleRate, channels: ALACFrame.channels)
    let capacity: Int
    private let state = Mutex(State())
    /// Signalled on each append and at the end: the reader waits on it when the queue is empty.
    /// Made at 0: libdispatch traps when a semaphore goes away holding less than it was made with.
    private let appended = DispatchSemaphore(value: 0)

    private struct State {
        var samples: [Int16] = []
        var head = 0
        var finished = false
        var waitingForRoom: [CheckedContinuation<Void, Never>] = []
        var count: Int { samples.count - head }
    }

    init(capacity: Int = ALACFrame.sampleRate * ALACFrame.channels / 2) { self.capacity = capacity }

    /// Frames queued and not read yet.
    var queuedFrames: Int { state.withLock { $0.count } / ALACFrame.channels }

    /// Adds `pcm` (interleaved stereo), a capacity's worth at a time, each once what is queued is
    /// below `capacity`; after `finish`, drops it.
    func append(_ pcm: [Int16]) async {
        for start in stride(from: 0, to: pcm.count, by: capacity) {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state in
                    if state.count < capacity || state.finished { return true }
                    state.waitingForRoom.append(continuation)
                    return false
                }
                if ready { continuation.resume() }
            }
            let added = state.withLock { state in
                guard !state.finished else { return false }
                state.samples += pcm[start..<min(pcm.count, start + capacity)]
                return true
            }
            guard added else { return }
            appended.signal()
        }
    }

    /// Nothing more comes: the reader gets what is queued, then `.ended`; waiting callers go.
    func finish() {
        let waiters = state.withLock { state in
            state.finished = true
            defer { state.waitingForRoom = [] }
            return state.waitingForRoom
        }
        for waiter in waiters { waiter.resume() }
        appended.signal()
    }

    func read(into buffer: UnsafeMutableBufferPointer<Int16>, waitingUpTo timeout: Duration) -> PCMRead {
        let deadline = DispatchTime.now() + .nanoseconds(Int(timeout.nanoseconds))
        while true {
            let (read, finished, waiter) = state.withLock { state in
                let samples = min(state.count, buffer.count / 2 * 2)
                if samples > 0 {
                    _ = UnsafeMutableBufferPointer(rebasing: buffer[..<samples]).update(fromContentsOf: state.samples[state.head..<(state.head + samples)])
                    state.head += samples
                    // Dropped from the front in one move once half of the array is read.
                    if state.head * 2 >= state.samples.count {
                        state.samples.removeFirst(state.head)
                        state.head = 0
                    }
                }
                let waiter = state.count < capacity && !state.waitingForRoom.isEmpty ? state.waitingForRoom.removeFirst() : nil
                return (samples, state.finished, waiter)
            }
            waiter?.resume()
            if read > 0 { return .frames(read / 2) }
            if finished { return .ended }
            if appended.wait(timeout: deadline) == .timedOut { return .starved }
        }
    }
}
