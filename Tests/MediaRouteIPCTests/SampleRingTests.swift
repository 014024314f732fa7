import CLinuxHelpers
import Foundation
import Glibc
@testable import MediaRouteIPC
import Testing
import TestSupport

@Suite("Sample rings: shared memory between a producer and a consumer", .serialized, .timeLimit(.minutes(1)))
struct SampleRingTests {
    /// The consumer's view of a ring: the same memfd and eventfd, mapped a second time, as a peer would.
    private func peer(of ring: SampleRing) throws -> SampleRing {
        try SampleRing(memory: dup(ring.memoryFD), wakeup: dup(ring.wakeupFD))
    }

    private func write(_ ring: SampleRing, _ bytes: [UInt8], at timestamp: UInt64) throws -> SampleRing.WriteResult {
        try bytes.withUnsafeBytes { try ring.write($0, timestamp: timestamp) }
    }

    private func readAll(_ ring: SampleRing) throws -> [([UInt8], UInt64)] {
        var records: [([UInt8], UInt64)] = []
        while try ring.read({ records.append((Array($0), $1)) }) {}
        return records
    }

    @Test func recordsArriveWholeInOrderAcrossTheWrapWithTheirTimestamps() throws {
        let producer = try SampleRing.create(format: .defaultAudio, capacity: 4096)
        let consumer = try peer(of: producer)
        #expect(consumer.format == .defaultAudio && consumer.capacity == 4096)
        var expected: [([UInt8], UInt64)] = []
        // Records of awkward sizes, read as they go: the write position wraps the 4 KiB area many times.
        for i in 0..<500 {
            let record = [UInt8](repeating: UInt8(i % 251), count: 1 + (i * 37) % 900)
            #expect(try write(producer, record, at: UInt64(i) * 1000) == .written)
            expected.append((record, UInt64(i) * 1000))
            if i % 3 == 2 {
                let got = try readAll(consumer)
                #expect(got.map(\.0) == expected.map(\.0) && got.map(\.1) == expected.map(\.1))
                expected.removeAll()
            }
        }
        #expect(try readAll(consumer).map(\.0) == expected.map(\.0))
        let statistics = producer.statistics
        #expect(statistics.recordsWritten == 500 && statistics.recordsRead == 500 && statistics.fill == 0 && statistics.overruns == 0)
    }

    @Test func aFullRingRefusesAndCountsInsteadOfBlocking() throws {
        let producer = try SampleRing.create(format: .defaultAudio, capacity: 4096)
        let consumer = try peer(of: producer)
        let record = [UInt8](repeating: 7, count: 1000)  // 1,024 bytes with its header, aligned
        var written = 0
        while try write(producer, record, at: 0) == .written { written += 1 }
        #expect(written == 4)
        #expect(try write(producer, record, at: 0) == .full)
        #expect(producer.statistics.overruns == 2)
        #expect(producer.statistics.fill == 4 * 1024)
        // Reading makes room again.
        #expect(try consumer.read { _, _ in })
        #expect(try write(producer, record, at: 0) == .written)
        // Too large for the ring at all: a clear error, not an overrun.
        let huge = [UInt8](repeating: 0, count: 3000)
        #expect(throws: SampleRingError.self) { _ = try write(producer, huge, at: 0) }
        // A consumer that has ended turns further writes away.
        consumer.closeConsumer()
        #expect(try write(producer, record, at: 0) == .consumerClosed)
    }

    @Test func theEventfdIsSignalledOnlyWhileTheConsumerSleeps() async throws {
        let producer = try SampleRing.create(format: .defaultAudio, capacity: 65536)
        let consumer = try peer(of: producer)
        var value: UInt64 = 0
        for _ in 0..<100 { _ = try write(producer, [1, 2, 3], at: 0) }
        #expect(read(consumer.wakeupFD, &value, 8) < 0 && errno == EAGAIN, "no system call per record while nobody waits")
        _ = try readAll(consumer)
        // A consumer that sleeps is woken by the next record: the producer wrote the eventfd (its
        // count is still 1 after the wake; the next wait resets it).
        async let woke = onThreadOfItsOwn { consumer.waitForRecord(timeout: .seconds(30)) }
        try await waitUntil { consumer.consumerIsWaiting }
        _ = try write(producer, [9], at: 42)
        #expect(try await woke)
        #expect(read(consumer.wakeupFD, &value, 8) == 8 && value == 1, "the producer did not signal the sleeping consumer")
        var timestamp: UInt64 = 0
        #expect(try consumer.read { _, t in timestamp = t })
        #expect(timestamp == 42)
        // Nothing comes: the wait ends at its timeout, not never.
        #expect(consumer.waitForRecord(timeout: .milliseconds(50)) == false)
    }

    @Test func aProducerFasterThanItsConsumerLosesRecordsNotTheProcess() async throws {
        let producer = try SampleRing.create(format: .defaultAudio, capacity: 16384)
        let consumer = try peer(of: producer)
        async let reader = onThreadOfItsOwn { () throws -> Int in
            var count = 0
            while true {
                if try consumer.read({ _, _ in count += 1 }) {
                    usleep(200)  // a slow consumer
                } else if consumer.producerClosed {
                    return count  // closed, and everything written before it was read
                } else {
                    _ = consumer.waitForRecord(timeout: .milliseconds(5))
                }
            }
        }
        let frame = [UInt8](repeating: 0, count: 960 * 8)  // 20 ms of 48 kHz stereo Float32
        var written = 0
        for i in 0..<2000 where try write(producer, frame, at: UInt64(i)) == .written { written += 1 }
        producer.closeProducer()
        let delivered = try await reader
        let statistics = producer.statistics
        #expect(statistics.overruns > 0 && UInt64(written) + statistics.overruns == 2000)
        #expect(delivered == written, "every record the ring took was delivered")
    }

    @Test func aRingFromAPeerIsCheckedBeforeItIsTrusted() throws {
        // Not sealed: a peer could shrink it under our mapping.
        let loose = clh_memfd_create("loose")
        ftruncate(loose, 8192)
        #expect(throws: SampleRingError.self) { _ = try SampleRing(memory: loose, wakeup: eventfd(0, 0)) }
        // A scribbled header.
        let ring = try SampleRing.create(format: .video(width: 64, height: 48, frameRate: 30), capacity: 65536)
        let alias = mmap(nil, 256, PROT_READ | PROT_WRITE, MAP_SHARED, ring.memoryFD, 0)!
        defer { munmap(alias, 256) }
        alias.storeBytes(of: UInt32(2), toByteOffset: 4, as: UInt32.self)
        let refused = #expect(throws: SampleRingError.self) { _ = try peer(of: ring) }
        #expect(refused?.message == "the sample ring is unusable: its layout version is 2, not 1")
        alias.storeBytes(of: UInt32(1), toByteOffset: 4, as: UInt32.self)
        let consumer = try peer(of: ring)
        #expect(consumer.format == .video(width: 64, height: 48, frameRate: 30))
        // A write position the producer could not have reached: reading fails, clearly.
        alias.storeBytes(of: UInt64(1 << 40), toByteOffset: 64, as: UInt64.self)
        let impossible = #expect(throws: SampleRingError.self) { _ = try consumer.read { _, _ in } }
        #expect(impossible?.message.contains("is impossible next to the read position") == true)
    }

    @Test func aConsumerThatScribblesOnItsPositionMakesWritesFailNotCrash() throws {
        let producer = try SampleRing.create(format: .defaultAudio, capacity: 4096)
        let alias = mmap(nil, 256, PROT_READ | PROT_WRITE, MAP_SHARED, producer.memoryFD, 0)!
        defer { munmap(alias, 256) }
        #expect(try write(producer, [1, 2, 3], at: 0) == .written)
        for scribble: UInt64 in [.max, 1 << 40, 33] {  // ahead of the 32 bytes written, or far off
            alias.storeBytes(of: scribble, toByteOffset: 128, as: UInt64.self)
            let refused = #expect(throws: SampleRingError.self) { _ = try write(producer, [4], at: 0) }
            #expect(refused?.message.contains("read position (\(scribble)) is impossible") == true)
        }
        // Its own write position is the producer's alone: scribbling there changes nothing for it.
        alias.storeBytes(of: UInt64(0), toByteOffset: 128, as: UInt64.self)
        alias.storeBytes(of: UInt64.max - 7, toByteOffset: 64, as: UInt64.self)
        #expect(try write(producer, [5], at: 0) == .written)
    }

    @Test func aRingMustBeSealedForGoodAndItsWakeupNeverBlocks() throws {
        // Size sealed, but the seals themselves left open: a peer could remove them.
        let unsealable = clh_memfd_create("half-sealed")
        ftruncate(unsealable, 256 + 4096)
        let (addSeals, sealShrink, sealGrow): (Int32, Int32, Int32) = (1033, 2, 4)  // F_ADD_SEALS, F_SEAL_SHRINK, F_SEAL_GROW (fcntl.h macros Swift cannot see)
        #expect(fcntl(unsealable, addSeals, sealShrink | sealGrow) == 0)
        let refused = #expect(throws: SampleRingError.self) { _ = try SampleRing(memory: unsealable, wakeup: eventfd(0, 0)) }
        #expect(refused?.message.contains("not sealed (shrink, grow and seal)") == true)
        // A blocking eventfd from a peer is made non-blocking before anything waits on it.
        let ring = try SampleRing.create(format: .defaultAudio, capacity: 4096)
        let consumer = try SampleRing(memory: dup(ring.memoryFD), wakeup: eventfd(0, Int32(EFD_CLOEXEC)))
        #expect(fcntl(consumer.wakeupFD, F_GETFL) & O_NONBLOCK != 0)
    }

    @Test func aRingLeavesNoDescriptorOrMappingBehind() throws {
        var memory: FileIdentity?
        var eventfds: [(fd: Int32, id: String)] = []
        do {
            let producer = try SampleRing.create(format: .defaultAudio, capacity: 1 << 16)
            let consumer = try peer(of: producer)
            _ = try write(producer, [1], at: 0)
            #expect(try consumer.read { _, _ in })
            memory = FileIdentity(descriptor: producer.memoryFD)
            eventfds = [producer.wakeupFD, consumer.wakeupFD].map { ($0, eventfdID($0)) }
            #expect(memory?.descriptorCount == 2)
            #expect(memory?.mappingCount == 2)
        }
        // Both sides gone: no descriptor, no mapping of that memory, both eventfds closed.
        #expect(memory?.descriptorCount == 0)
        #expect(memory?.mappingCount == 0)
        // (By the kernel's id: a test running beside this one may get the same descriptor number.)
        for (fd, id) in eventfds { #expect(eventfdID(fd) != id) }
    }

    /// The kernel's id of the eventfd open at `fd` ("" if none is).
    private func eventfdID(_ fd: Int32) -> String {
        procFileText("/proc/self/fdinfo/\(fd)").split(separator: "\n").first { $0.hasPrefix("eventfd-id:") }.map(String.init) ?? ""
    }
}
