import CLinuxHelpers
import Foundation
import MediaCodecs
import MediaRouteIPC
import RTP
import SoundOutput
import Synchronization

/// A receiver's real-time audio path in one process, for tests and benchmarks of the playout
/// buffer on a real network path: a sender encodes 20 ms Opus frames at real-time pace and sends
/// them as RTP over UDP on loopback (directly, or through a `JitterRelay`); a receiving thread puts
/// them into an `AudioPlayoutBuffer`; a card thread takes 10 ms at a time out of it at the pace of
/// the null output (`ClockPacedSink`), noting when each 10 ms left the buffer.
public final class PlayoutLink: Sendable {
    public struct Result: Sendable {
        /// Interleaved stereo, what left the buffer from the first audio on.
        public var output: [Float]
        /// When each 10 ms of `output` left the buffer (monotonic ns).
        public var periodTimes: [UInt64]
        /// When each 20 ms frame was handed to the encoder (monotonic ns).
        public var writeTimes: [UInt64]
        public var statistics: AudioPlayoutBuffer.Statistics
        public var relay: JitterRelay.Counts?
    }

    public let network: JitterRelay.Network?

    public init(network: JitterRelay.Network?) { self.network = network }

    /// Sends `frames` 20 ms frames, frame `i` being `source(i)` (960 × 2 samples), and plays them
    /// until the buffer runs dry after the last.
    public func run(frames: Int, source: @escaping @Sendable (Int) -> [Float]) async throws -> Result {
        try await onThreadOfItsOwn { try self.runBlocking(frames: frames, source: source) }
    }

    private func runBlocking(frames: Int, source: (Int) -> [Float]) throws -> Result {
        let buffer = try AudioPlayoutBuffer(sampleRate: 48_000, channels: 2, readFrames: 480)
        let (socket, port) = try UDPSocket.bind(host: "127.0.0.1")
        var ends: [Int32] = [-1, -1]
        guard clh_pipe_cloexec(&ends) == 0 else {
            close(socket)
            throw PrivateDaemonError("cannot make a pipe: errno \(errno)")
        }
        let wake = ends
        let relay: JitterRelay?
        do {
            relay = try network.map { try JitterRelay(to: port, network: $0) }
        } catch {
            [socket, wake[0], wake[1]].forEach { _ = close($0) }
            throw error
        }
        let sender: Int32
        do {
            sender = try UDPSocket.connect(host: "127.0.0.1", port: relay?.port ?? port)
        } catch {
            relay?.stop()
            [socket, wake[0], wake[1]].forEach { _ = close($0) }
            throw error
        }
        defer { [socket, sender, wake[0], wake[1]].forEach { _ = close($0) } }

        // The network's side: every datagram into the buffer as it arrives.
        let received = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            defer { received.signal() }
            var bytes = [UInt8](repeating: 0, count: 2048)
            while true {
                var fds = [pollfd(fd: socket, events: Int16(POLLIN), revents: 0), pollfd(fd: wake[0], events: Int16(POLLIN), revents: 0)]
                guard poll(&fds, 2, -1) >= 0 || errno == EINTR else { return }
                if fds[1].revents != 0 { return }
                while true {
                    let size = bytes.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
                    guard size > 0 else { break }
                    if let packet = bytes.withUnsafeBytes({ try? RTPPacket(datagram: UnsafeRawBufferPointer(rebasing: $0[0..<size])) }) {
                        buffer.insert(packet)
                    }
                }
            }
        }

        // The card's side: 10 ms at a time at the null output's pace, until dry after the last frame.
        let senderDone = Atomic<Bool>(false)
        let played = Mutex<(output: [Float], times: [UInt64])>(([], []))
        let card = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            defer { card.signal() }
            let sink = ClockPacedSink(sampleRate: 48_000, channels: 2)
            var period = [Float](repeating: 0, count: 480 * 2)
            var started = false
            while true {
                let content = period.withUnsafeMutableBufferPointer { buffer.read(into: $0) }
                let time = SampleRing.monotonicNow()
                if content == .audio { started = true }
                if content == .filling && started && senderDone.load(ordering: .acquiring) { return }
                if started { played.withLock { $0.output += period; $0.times.append(time) } }
                try? period.withUnsafeBufferPointer { try sink.write($0) }
            }
        }

        // The sender: one frame every 20 ms by the monotonic clock.
        let encoder = try OpusRTPEncoder(OpusEncoder.Settings(), sampleType: .float32, payloadType: 96)
        var writeTimes: [UInt64] = []
        var due = timespec()
        clock_gettime(CLOCK_MONOTONIC, &due)
        for index in 0..<frames {
            writeTimes.append(SampleRing.monotonicNow())
            _ = try source(index).withUnsafeBytes { samples in try encoder.add(samples) { _ = UDPSocket.send(sender, $0) } }
            due.tv_nsec += 20_000_000
            if due.tv_nsec >= 1_000_000_000 { due.tv_sec += 1; due.tv_nsec -= 1_000_000_000 }
            while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &due, nil) == EINTR {}
        }
        relay?.stop()  // passes on what it still holds
        let relayCounts = relay?.relayed
        senderDone.store(true, ordering: .releasing)
        card.wait()
        _ = write(wake[1], "x", 1)
        received.wait()
        let (output, times) = played.withLock { $0 }
        return Result(output: output, periodTimes: times, writeTimes: writeTimes, statistics: buffer.statistics, relay: relayCounts)
    }
}
