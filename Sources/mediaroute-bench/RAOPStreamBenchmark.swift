import CBenchBaseline
import Foundation
import Glibc
import MediaRouteIPC
import PCMPlayback
import PrivateDaemons
import RAOP
import Synchronization

/// `raop-stream`: the CPU it takes to stream audio to one AirPlay receiver (a real shairport-sync),
/// encrypted as AirPort Express and Apple TVs require, per minute of audio: `RAOPSender` playing a
/// PCM source in memory (its thread reads it as the driver's reads an app's ring or a decoded
/// file), against a C loop doing the same framing, encryption (OpenSSL), RTP and pacing, run on
/// a thread of this process during the same seconds, so both see the same machine: the C loop's
/// thread CPU is its figure, the rest of the process's CPU ours. PipeWire's RAOP sink would be the other
/// natural baseline; it needs a PipeWire daemon, which this machine does not run. Also: how long
/// after `play` the receiver's output has the first audio, beside the buffering the protocol asks for.
struct RAOPStreamBenchmark {
    let seconds: Int

    func run() async throws {
        let frames = seconds * 44_100
        var pcm = [Int16](repeating: 0, count: frames * 2)
        for i in 0..<frames {
            let value = Int16(16_000 * sin(2 * Double.pi * 441 * Double(i) / 44_100))
            (pcm[2 * i], pcm[2 * i + 1]) = (value, value)
        }
        print("raop-stream: \(seconds) s of 44.1 kHz stereo, encrypted, both at once in real time")

        let key = (0..<16).map { UInt8($0) }, iv = (0..<16).map { UInt8(255 - $0) }
        let (sink, port) = try UDPSocket.bind(host: "127.0.0.1")
        defer { close(sink) }
        let receiver = try await PrivateAirPlayReceiver.start(name: "Bench Speaker")
        let sender = RAOPSender(configuration: RAOPSenderConfiguration(host: receiver.host, port: receiver.port, encrypted: true))
        let (ours, baseline, firstAudio): (Double, Double, Duration?)
        do {
            try await sender.start()
            let played = ContinuousClock.now
            try await sender.play(MemoryPCMSource(pcm))
            // The CPU is counted once the first audio was seen: looking for it is the bench's work.
            let heard = try await Self.firstAudio(at: receiver)
            // The C loop's packets are read as a receiver reads ours: waking the reader is part of
            // what a send costs. The reader's own CPU is nobody's.
            let reader = SinkReader(socket: sink)
            let before = Self.processCPU()
            let loop = try await onThreadOfItsOwn { [pcm] in
                pcm.withUnsafeBufferPointer { cbb_raop_stream($0.baseAddress, frames, key, iv, Int32(port)) }
            }
            let read = reader.stop()
            guard loop > 0 else { throw BenchmarkError("the C RAOP loop failed") }
            if case .failed(let error)? = await sender.stopStreaming() { throw error }
            (ours, baseline) = (Double(Self.processCPU() - before - UInt64(loop) - read.cpu), Double(loop))
            print("  the C loop's reader took \(read.packets) packets")
            firstAudio = heard.map { $0 - played }
        } catch {
            await sender.teardown()
            await receiver.stop()
            throw error
        }
        let audioLatency = await sender.audioLatency
        await sender.teardown()
        await receiver.stop()

        let perMinute = { (nanoseconds: Double) in nanoseconds / 1e9 * 60 / Double(seconds) }
        print("  raw C loop (ALAC framing, OpenSSL AES-128-CBC, RTP, sendto, clock_nanosleep), its thread: \(format(perMinute(baseline), digits: 3)) CPU s per minute of audio")
        print("  RAOPSender to shairport-sync (the rest of the process): \(format(perMinute(ours), digits: 3)) CPU s per minute of audio")
        let buffering = Double(RAOPSenderConfiguration(host: "").latencyFrames + UInt32(audioLatency ?? 0)) / 44_100
        print("  play to the first audio in the receiver's output: \(firstAudio.map { format($0.seconds, digits: 3) + " s" } ?? "not seen"), "
            + "the protocol's own buffering \(format(buffering, digits: 3)) s (latency \(RAOPSenderConfiguration(host: "").latencyFrames) frames + Audio-Latency \(audioLatency ?? 0))")
        printResult("raop-stream", ratio: ours / baseline, target: 1.0)
    }

    /// The clip in memory, read as a decoded file or an app's ring is, over and over.
    private final class MemoryPCMSource: PCMSource {
        let format = PCMFormat(sampleRate: ALACFrame.sampleRate, channels: ALACFrame.channels)
        private let samples: [Int16]
        private let position = Atomic(0)

        init(_ samples: [Int16]) { self.samples = samples }

        func read(into buffer: UnsafeMutableBufferPointer<Int16>, waitingUpTo timeout: Duration) -> PCMRead {
            let start = position.load(ordering: .relaxed), count = min(buffer.count / 2 * 2, samples.count - start)
            samples.withUnsafeBufferPointer { buffer.baseAddress!.update(from: $0.baseAddress! + start, count: count) }
            position.store((start + count) % samples.count, ordering: .relaxed)
            return .frames(count / 2)
        }
    }

    /// A thread reading every datagram that arrives on a socket until stopped; its CPU time.
    private final class SinkReader: Sendable {
        private let stopping = Atomic(false)
        private let done = DispatchSemaphore(value: 0)
        private let result = Mutex((cpu: UInt64(0), packets: 0))

        init(socket: Int32) {
            Thread.detachNewThread { [self] in
                var buffer = [UInt8](repeating: 0, count: 2048), packets = 0
                while !stopping.load(ordering: .relaxed) {
                    var ready = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
                    guard poll(&ready, 1, 100) > 0 else { continue }
                    while recv(socket, &buffer, buffer.count, 0) > 0 { packets += 1 }
                }
                var cpu = timespec()
                clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu)
                result.withLock { $0 = (UInt64(cpu.tv_sec) * 1_000_000_000 + UInt64(cpu.tv_nsec), packets) }
                done.signal()
            }
        }

        func stop() -> (cpu: UInt64, packets: Int) {
            stopping.store(true, ordering: .relaxed)
            done.wait()
            return result.withLock { $0 }
        }
    }

    /// When a sample above silence first reaches the receiver's output.
    private static func firstAudio(at receiver: PrivateAirPlayReceiver) async throws -> ContinuousClock.Instant? {
        let deadline = ContinuousClock.now + .seconds(10)
        var checked = receiver.audioBytes
        while ContinuousClock.now < deadline {
            let output = receiver.audio(from: checked)
            if output.contains(where: { abs(Int($0)) > 1_000 }) { return .now }
            checked += output.count * 2
            try await Task.sleep(for: .milliseconds(2))
        }
        return nil
    }

    /// User and system CPU of the whole process, in nanoseconds.
    private static func processCPU() -> UInt64 {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let micros = (Int(usage.ru_utime.tv_sec) + Int(usage.ru_stime.tv_sec)) * 1_000_000 + Int(usage.ru_utime.tv_usec) + Int(usage.ru_stime.tv_usec)
        return UInt64(micros) * 1_000
    }
}
