import Dispatch
import Foundation
import PCMPlayback
import Synchronization

/// Moves PCM from a source (an app's sample ring, the local player) to a receiver's stream. A
/// thread of its own reads, since sources block; the stream's task takes what it read and sends
/// it, and the sender paces it in real time. A few packets' worth may wait between the two, so
/// the source is read at the receiver's pace, not as fast as it can give.
final class PCMPump: Sendable {
    /// 352-frame packets (AirPlay's), as the reads come.
    let chunks: AsyncStream<[Int16]>
    private let continuation: AsyncStream<[Int16]>.Continuation
    /// Free places between the thread and the task. Made empty and filled: libdispatch traps
    /// when a semaphore goes away holding less than it was made with (a pump stopped mid-stream).
    private let room = DispatchSemaphore(value: 0)
    private let stopped = Atomic<Bool>(false)
    /// Finishes when the thread has left: a source has one reader at a time.
    private let exited: AsyncStream<Void>
    private let exiting: AsyncStream<Void>.Continuation

    init(source: any PCMSource, framesPerChunk: Int = 352) {
        (chunks, continuation) = AsyncStream.makeStream(bufferingPolicy: .unbounded)
        (exited, exiting) = AsyncStream.makeStream()
        for _ in 0..<4 { room.signal() }
        let thread = Thread { [self] in
            let channels = source.format.channels
            let buffer = UnsafeMutableBufferPointer<Int16>.allocate(capacity: framesPerChunk * channels)
            defer { buffer.deallocate() }
            while !isStopped {
                room.wait()
                guard !isStopped else { break }
                switch source.read(into: buffer, waitingUpTo: .milliseconds(100)) {
                case .frames(let frames): continuation.yield(Array(buffer[0..<(frames * channels)]))
                case .starved: room.signal()  // nothing taken: the room is still free
                case .ended: stopped.store(true, ordering: .relaxed)
                }
            }
            continuation.finish()
            exiting.finish()
        }
        thread.name = "airplay-pump"
        thread.start()
    }

    private var isStopped: Bool { stopped.load(ordering: .relaxed) }

    /// The consumer sent a chunk: the thread may read the next.
    func taken() { room.signal() }

    /// Stops reading, and returns once the thread has left its current read (at most its 100 ms
    /// wait): the source may then be read by another pump.
    func stop() async {
        stopped.store(true, ordering: .relaxed)
        room.signal()
        for await _ in exited {}
    }
}
