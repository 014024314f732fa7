import CBenchBaseline
import CLinuxHelpers
import Foundation
import Glibc
import MediaRouteIPC

/// `ring-throughput`: bytes per second through a sample ring between two processes (the producer
/// copies each record in, the consumer copies it out), against one `memcpy` of the same bytes in
/// the same run.
struct RingThroughputBenchmark {
    let megabytes: Int
    static let recordSize = 64 * 1024

    func run() async throws {
        let total = megabytes * 1024 * 1024
        print("ring-throughput: \(megabytes) MiB in \(Self.recordSize / 1024) KiB records through a 4 MiB ring, between two processes")
        // Baseline: one memcpy per record, in one process, into a buffer as large as the ring's data
        // area (so it runs through the same caches, not just the one record's worth).
        let source = [UInt8](repeating: 0x5a, count: Self.recordSize)
        var destination = [UInt8](repeating: 0, count: 4 << 20)
        let slots = destination.count / Self.recordSize
        let copyStart = now()
        for index in 0..<(total / Self.recordSize) {
            source.withUnsafeBytes { from in
                destination.withUnsafeMutableBytes { $0.baseAddress!.advanced(by: (index % slots) * Self.recordSize).copyMemory(from: from.baseAddress!, byteCount: from.count) }
            }
        }
        let copyTime = Double(now() - copyStart)
        print("  memcpy into a 4 MiB buffer, one process: \(format(Double(total) / copyTime)) GB/s")

        let peer = try PeerProcess(mode: "ipc-echo")
        let connection = try await peer.connect()
        let ring = try SampleRing.create(format: .defaultAudio, capacity: 4 << 20)
        let start = now()
        let producer = Task.detached {
            source.withUnsafeBytes { record in
                for _ in 0..<(total / Self.recordSize) {
                    while (try? ring.write(record, timestamp: 0)) == .full { sched_yield() }
                }
            }
        }
        _ = try await connection.request("ring.consume", ["bytes": .integer(Int64(total))], descriptors: [ring.memoryFD, ring.wakeupFD], timeout: .seconds(120))
        let ringTime = Double(now() - start)
        await producer.value
        print("  sample ring, two processes: \(format(Double(total) / ringTime)) GB/s (overruns while full: \(ring.statistics.overruns))")
        await connection.close()
        _ = await peer.process.exitStatus()
        printResult("ring-throughput", ratio: ringTime / copyTime, target: 4)
    }
}

/// `ring-wakeup`: from a producer's write to a sleeping consumer (another process) being awake with
/// the record, against a raw eventfd written with the time and read by a blocked reader.
struct RingWakeupBenchmark {
    let count: Int

    func run() async throws {
        print("ring-wakeup: \(count) wake-ups, one every 2 ms, consumer in another process")
        let peer = try PeerProcess(mode: "ipc-echo")
        let connection = try await peer.connect()
        // Baseline: eventfd.
        let eventfd = CLinuxHelpers.eventfd(0, Int32(EFD_CLOEXEC)), ack = CLinuxHelpers.eventfd(0, Int32(EFD_CLOEXEC))
        defer { close(eventfd); close(ack) }
        guard eventfd >= 0, ack >= 0 else { throw BenchmarkError("cannot create eventfds: \(String(cString: strerror(errno)))") }
        let count = self.count
        async let baselineAnswer = connection.request("eventfd.wakeups", ["count": .integer(Int64(count))], descriptors: [eventfd, ack], timeout: .seconds(120))
        try await Task.sleep(for: .milliseconds(100))
        for _ in 0..<count {
            var value = SampleRing.monotonicNow()
            _ = Glibc.write(eventfd, &value, 8)
            // The reader acknowledges each wake-up; a reader that died must not hang this side.
            var ready = pollfd(fd: ack, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 2000) == 1 else { throw BenchmarkError("the eventfd reader stopped acknowledging") }
            _ = Glibc.read(ack, &value, 8)
            usleep(2000)
        }
        let baseline = try Self.samples(try await baselineAnswer, count: count, of: "the eventfd baseline")
        print(baseline.line("  raw eventfd write to reader awake"))

        let ring = try SampleRing.create(format: .defaultAudio, capacity: 65536)
        async let ringAnswer = connection.request("ring.wakeups", ["count": .integer(Int64(count))], descriptors: [ring.memoryFD, ring.wakeupFD], timeout: .seconds(120))
        try await Task.sleep(for: .milliseconds(100))
        let record = [UInt8](repeating: 0, count: 3840)
        for _ in 0..<count {
            _ = try record.withUnsafeBytes { try ring.write($0, timestamp: SampleRing.monotonicNow()) }
            usleep(2000)
        }
        let ours = try Self.samples(try await ringAnswer, count: count, of: "the sample ring")
        print(ours.line("  sample ring write to consumer awake with the record"))
        await connection.close()
        _ = await peer.process.exitStatus()
        // Ours polls (with a timeout, so a reader can stop) where the baseline blocks in read, and
        // the producer copies a record and checks an atomic first: within twice the bare eventfd.
        printResult("ring-wakeup", ratio: ours.median / baseline.median, target: 2)
    }

    /// Every wake-up measured, or the run fails: a missed one must not pass as a fast one.
    private static func samples(_ answer: RPCResponse, count: Int, of side: String) throws -> LatencySamples {
        let samples = answer.result.arrayValue?.compactMap { $0.integerValue.map(UInt64.init) } ?? []
        guard samples.count == count else { throw BenchmarkError("\(side) woke \(samples.count) times of \(count)") }
        return LatencySamples(samples)
    }
}
