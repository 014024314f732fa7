import Atomics
import CLinuxHelpers
import Glibc
import Synchronization

/// A single-producer, single-consumer ring of sample records in shared memory (IPC/README.md §13):
/// a sealed memfd mapped by the producer (an app) and the consumer (a driver), and an eventfd that
/// wakes the consumer, signalled only while it sleeps. Samples never pass through a socket, and the
/// supervisor that made the ring never touches them.
///
/// A full ring refuses the record (counted as an overrun) rather than block the producer; an empty
/// one lets the consumer sleep. Everything read from the shared header is checked: a peer that
/// scribbles on it makes this side's calls fail with `SampleRingError`, never crash.
public final class SampleRing: @unchecked Sendable {
    public let format: SampleFormat
    /// Bytes in the data area (a power of two).
    public let capacity: Int
    public let memoryFD: Int32
    public let wakeupFD: Int32
    private let base: UnsafeMutableRawPointer
    private let mappedSize: Int
    /// Each side's own position, kept here and only published to the shared header: what a peer
    /// writes there can make a call fail, never make this side write or read out of place.
    private let ownWritePosition: Atomic<UInt64>
    private let ownReadPosition: Atomic<UInt64>

    static let magic: UInt32 = 0x5253_524D  // "MRSR" in memory order
    static let layoutVersion: UInt32 = 1
    static let headerSize = 256
    static let recordHeaderSize = 16
    public static let maximumCapacity = 1 << 30

    // Header offsets (IPC/README.md §13.1).
    enum Offset {
        static let magic = 0, version = 4, kind = 8, headerSize = 12, capacity = 16
        static let formatA = 24, formatB = 28, formatC = 32, formatD = 36, formatE = 40, strideY = 44, strideUV = 48
        static let writePosition = 64, recordsWritten = 72, overruns = 80, lastWrite = 88, producerClosed = 96
        static let readPosition = 128, recordsRead = 136, underruns = 144, lastRead = 152, consumerWaiting = 160, consumerClosed = 164
        static let consumerOutputBytes = 168
    }

    public enum WriteResult: Sendable, Equatable {
        case written
        /// No room: the record was dropped and counted as an overrun.
        case full
        /// The consumer ended the stream.
        case consumerClosed
    }

    /// The counters both sides keep, for progress lines and tests.
    public struct Statistics: Sendable, Equatable {
        public var recordsWritten: UInt64
        public var recordsRead: UInt64
        public var overruns: UInt64
        public var underruns: UInt64
        /// Bytes written and not yet read.
        public var fill: Int
        public var consumerOutputBytes: UInt64
    }

    // MARK: Making and mapping

    /// Makes a ring for `format` (what the supervisor does): a sealed memfd with its header written,
    /// and an eventfd. `capacity` is rounded up to a power of two.
    public static func create(format: SampleFormat, capacity requested: Int) throws(SampleRingError) -> SampleRing {
        if let problem = format.problem { throw SampleRingError("cannot make a ring for \(format): \(problem)") }
        var capacity = 4096
        while capacity < requested && capacity < maximumCapacity { capacity <<= 1 }
        let memory = clh_memfd_create("mediaroute-ring")
        guard memory >= 0 else { throw SampleRingError("cannot create shared memory (memfd_create): \(String(cString: strerror(errno)))") }
        guard ftruncate(memory, off_t(headerSize + capacity)) == 0, clh_seal_size(memory) == 0 else {
            let reason = String(cString: strerror(errno))
            close(memory)
            throw SampleRingError("cannot size the ring's shared memory to \(headerSize + capacity) bytes: \(reason)")
        }
        let wakeup = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        guard wakeup >= 0 else {
            close(memory)
            throw SampleRingError("cannot create the ring's eventfd: \(String(cString: strerror(errno)))")
        }
        guard let base = mmap(nil, headerSize + capacity, PROT_READ | PROT_WRITE, MAP_SHARED, memory, 0), base != MAP_FAILED else {
            close(memory)
            close(wakeup)
            throw SampleRingError("cannot map the ring: \(String(cString: strerror(errno)))")
        }
        base.initializeMemory(as: UInt8.self, repeating: 0, count: headerSize)
        base.storeBytes(of: magic, toByteOffset: Offset.magic, as: UInt32.self)
        base.storeBytes(of: layoutVersion, toByteOffset: Offset.version, as: UInt32.self)
        base.storeBytes(of: UInt32(headerSize), toByteOffset: Offset.headerSize, as: UInt32.self)
        base.storeBytes(of: UInt64(capacity), toByteOffset: Offset.capacity, as: UInt64.self)
        switch format {
        case .audio(let rate, let channels, let type):
            base.storeBytes(of: UInt32(1), toByteOffset: Offset.kind, as: UInt32.self)
            base.storeBytes(of: UInt32(rate), toByteOffset: Offset.formatA, as: UInt32.self)
            base.storeBytes(of: UInt32(channels), toByteOffset: Offset.formatB, as: UInt32.self)
            base.storeBytes(of: UInt32(type.rawValue), toByteOffset: Offset.formatC, as: UInt32.self)
        case .video(let width, let height, let rate):
            base.storeBytes(of: UInt32(2), toByteOffset: Offset.kind, as: UInt32.self)
            base.storeBytes(of: UInt32(width), toByteOffset: Offset.formatA, as: UInt32.self)
            base.storeBytes(of: UInt32(height), toByteOffset: Offset.formatB, as: UInt32.self)
            base.storeBytes(of: UInt32(1), toByteOffset: Offset.formatC, as: UInt32.self)
            base.storeBytes(of: UInt32(rate), toByteOffset: Offset.formatD, as: UInt32.self)
            base.storeBytes(of: UInt32(1), toByteOffset: Offset.formatE, as: UInt32.self)
            base.storeBytes(of: UInt32(width), toByteOffset: Offset.strideY, as: UInt32.self)
            base.storeBytes(of: UInt32((width + 1) / 2), toByteOffset: Offset.strideUV, as: UInt32.self)
        }
        return SampleRing(format: format, capacity: capacity, memory: memory, wakeup: wakeup, base: base)
    }

    /// Maps the ring that came with a message as its descriptors 0 (memfd) and 1 (eventfd), taking
    /// both: neither is left open if the other is missing or the ring is unusable.
    public convenience init(descriptors: ReceivedDescriptors) throws {
        let memory = try descriptors.take(0)
        let wakeup: Int32
        do { wakeup = try descriptors.take(1) } catch {
            close(memory)
            throw error
        }
        try self.init(memory: memory, wakeup: wakeup)
    }

    /// Maps a ring received from a peer (the memfd and eventfd that came with its message), taking
    /// ownership of both descriptors. Checks the header and the file before trusting either.
    public convenience init(memory: Int32, wakeup: Int32) throws(SampleRingError) {
        func fail(_ reason: String) -> SampleRingError {
            close(memory)
            close(wakeup)
            return SampleRingError("the sample ring is unusable: \(reason)")
        }
        // The seals first: a size read before them could change before the mapping.
        guard clh_size_is_sealed(memory) == 1 else {
            throw fail("its shared memory's size is not sealed (shrink, grow and seal), so a peer could truncate it")
        }
        var status = stat()
        guard fstat(memory, &status) == 0 else { throw fail("cannot read its shared memory's size (\(String(cString: strerror(errno))))") }
        guard status.st_mode & S_IFMT == S_IFREG else { throw fail("its memory descriptor is not a shared-memory file") }
        // A wake-up read must never block (IPC/README.md §13.1), whatever the peer sent.
        let flags = fcntl(wakeup, F_GETFL)
        guard flags >= 0, fcntl(wakeup, F_SETFL, flags | O_NONBLOCK) == 0 else { throw fail("its wake-up descriptor is not usable (\(String(cString: strerror(errno))))") }
        let size = Int(status.st_size)
        guard size > Self.headerSize, size - Self.headerSize <= Self.maximumCapacity else { throw fail("its shared memory is \(size) bytes") }
        guard let base = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_SHARED, memory, 0), base != MAP_FAILED else {
            throw fail("it cannot be mapped (\(String(cString: strerror(errno))))")
        }
        func field(_ offset: Int) -> Int { Int(base.load(fromByteOffset: offset, as: UInt32.self)) }
        let rawCapacity = base.load(fromByteOffset: Offset.capacity, as: UInt64.self)
        let capacity = Int(truncatingIfNeeded: rawCapacity)
        var problem: String?
        if base.load(fromByteOffset: Offset.magic, as: UInt32.self) != Self.magic { problem = "its header does not start with the magic \"MRSR\"" }
        else if base.load(fromByteOffset: Offset.version, as: UInt32.self) != Self.layoutVersion { problem = "its layout version is \(field(Offset.version)), not \(Self.layoutVersion)" }
        else if field(Offset.headerSize) != Self.headerSize { problem = "its header size is \(field(Offset.headerSize)), not \(Self.headerSize)" }
        else if rawCapacity < 4096 || rawCapacity & (rawCapacity - 1) != 0 || UInt64(size - Self.headerSize) != rawCapacity {
            problem = "its capacity \(rawCapacity) is not a power of two of at least 4096 matching its \(size) bytes"
        }
        let format: SampleFormat
        switch (field(Offset.kind), SampleFormat.SampleType(rawValue: field(Offset.formatC))) {
        case (1, let type?): format = .audio(sampleRate: field(Offset.formatA), channels: field(Offset.formatB), sampleType: type)
        case (2, _) where field(Offset.formatC) == 1 && field(Offset.formatE) == 1:
            format = .video(width: field(Offset.formatA), height: field(Offset.formatB), frameRate: field(Offset.formatD))
        default:
            format = .defaultAudio
            problem = problem ?? "its header names no known format (kind \(field(Offset.kind)), sample type or pixel format \(field(Offset.formatC)))"
        }
        if problem == nil, let formatProblem = format.problem { problem = formatProblem }
        if problem == nil, case .video(let width, _, _) = format,
           field(Offset.strideY) != width || field(Offset.strideUV) != (width + 1) / 2 {
            problem = "its strides (\(field(Offset.strideY)), \(field(Offset.strideUV))) are not those of \(width)-pixel I420 rows"
        }
        if let problem {
            munmap(base, size)
            throw fail(problem)
        }
        self.init(format: format, capacity: capacity, memory: memory, wakeup: wakeup, base: base)
    }

    private init(format: SampleFormat, capacity: Int, memory: Int32, wakeup: Int32, base: UnsafeMutableRawPointer) {
        self.format = format
        self.capacity = capacity
        memoryFD = memory
        wakeupFD = wakeup
        self.base = base
        mappedSize = Self.headerSize + capacity
        // Only each side writes its own position, and a new ring starts at 0: these are where it left off.
        ownWritePosition = Atomic(base.load(fromByteOffset: Offset.writePosition, as: UInt64.self) & ~15)
        ownReadPosition = Atomic(base.load(fromByteOffset: Offset.readPosition, as: UInt64.self) & ~15)
    }

    deinit {
        munmap(base, mappedSize)
        close(memoryFD)
        close(wakeupFD)
    }

    private func atomic(_ offset: Int) -> UnsafeAtomic<UInt64> {
        UnsafeAtomic(at: (base + offset).assumingMemoryBound(to: UInt64.AtomicRepresentation.self))
    }

    private func atomic32(_ offset: Int) -> UnsafeAtomic<UInt32> {
        UnsafeAtomic(at: (base + offset).assumingMemoryBound(to: UInt32.AtomicRepresentation.self))
    }

    private var data: UnsafeMutableRawPointer { base + Self.headerSize }

    // MARK: Producer

    /// The largest record payload: half the ring, so two always fit.
    public var maximumRecordSize: Int { capacity / 2 - Self.recordHeaderSize }

    /// Appends one record (`payload` with its media `timestamp`, in nanoseconds) without waiting.
    public func write(_ payload: UnsafeRawBufferPointer, timestamp: UInt64) throws(SampleRingError) -> WriteResult {
        guard payload.count <= maximumRecordSize else {
            throw SampleRingError("a record of \(payload.count) bytes is over this ring's limit of \(maximumRecordSize); write smaller pieces")
        }
        if consumerClosed { return .consumerClosed }
        let need = Self.recordHeaderSize + Self.align(payload.count)
        let writePosition = ownWritePosition.load(ordering: .relaxed)
        let readPosition = atomic(Offset.readPosition).load(ordering: .acquiring)
        guard readPosition <= writePosition, writePosition - readPosition <= UInt64(capacity) else {
            throw SampleRingError("the consumer's read position (\(readPosition)) is impossible next to the write position (\(writePosition))")
        }
        let offset = Int(writePosition % UInt64(capacity))
        let tail = capacity - offset
        let total = need + (tail < need ? tail : 0)
        guard writePosition - readPosition <= UInt64(capacity - total) else {
            atomic(Offset.overruns).wrappingIncrement(ordering: .relaxed)
            return .full
        }
        var at = offset
        if tail < need {
            // A record never wraps: pad to the end and start again at the beginning.
            (data + offset).storeBytes(of: UInt32(tail - Self.recordHeaderSize), as: UInt32.self)
            (data + offset + 4).storeBytes(of: UInt32(1), as: UInt32.self)
            at = 0
        }
        (data + at).storeBytes(of: UInt32(payload.count), as: UInt32.self)
        (data + at + 4).storeBytes(of: UInt32(0), as: UInt32.self)
        (data + at + 8).storeBytes(of: timestamp, as: UInt64.self)
        if let source = payload.baseAddress { (data + at + Self.recordHeaderSize).copyMemory(from: source, byteCount: payload.count) }
        ownWritePosition.store(writePosition &+ UInt64(total), ordering: .relaxed)
        atomic(Offset.writePosition).store(writePosition &+ UInt64(total), ordering: .sequentiallyConsistent)
        atomic(Offset.recordsWritten).wrappingIncrement(ordering: .relaxed)
        atomic(Offset.lastWrite).store(Self.monotonicNow(), ordering: .relaxed)
        // Wake the consumer only if it sleeps (or is about to): no system call per record otherwise.
        if atomic32(Offset.consumerWaiting).exchange(0, ordering: .sequentiallyConsistent) != 0 {
            var one: UInt64 = 1
            _ = Glibc.write(wakeupFD, &one, 8)
        }
        return .written
    }

    /// The producer is done: the consumer sees `producerClosed` once it has read the rest.
    public func closeProducer() {
        atomic32(Offset.producerClosed).store(1, ordering: .sequentiallyConsistent)
        var one: UInt64 = 1
        _ = Glibc.write(wakeupFD, &one, 8)
    }

    // MARK: Consumer

    /// Visits the oldest record (payload and timestamp) and releases it; false if the ring is empty.
    /// The payload is valid only inside `body`.
    public func read(_ body: (UnsafeRawBufferPointer, UInt64) -> Void) throws(SampleRingError) -> Bool {
        var readPosition = ownReadPosition.load(ordering: .relaxed)
        while true {
            let writePosition = atomic(Offset.writePosition).load(ordering: .acquiring)
            guard writePosition != readPosition else { return false }
            guard writePosition > readPosition, writePosition - readPosition <= UInt64(capacity) else {
                throw SampleRingError("the producer's write position (\(writePosition)) is impossible next to the read position (\(readPosition))")
            }
            let available = Int(writePosition - readPosition)
            let offset = Int(readPosition % UInt64(capacity))
            let length = Int((data + offset).load(as: UInt32.self))
            let flags = (data + offset + 4).load(as: UInt32.self)
            let size = Self.recordHeaderSize + Self.align(length)
            guard size <= available else {
                throw SampleRingError("a record claims \(length) bytes, more than the \(available) written")
            }
            guard offset + size <= capacity else {
                throw SampleRingError("a record of \(length) bytes at offset \(offset) runs past the end of the \(capacity)-byte ring")
            }
            if flags & 1 != 0 {  // padding to the end of the data area
                readPosition += UInt64(size)
                ownReadPosition.store(readPosition, ordering: .relaxed)
                atomic(Offset.readPosition).store(readPosition, ordering: .releasing)
                continue
            }
            let timestamp = (data + offset + 8).load(as: UInt64.self)
            body(UnsafeRawBufferPointer(start: data + offset + Self.recordHeaderSize, count: length), timestamp)
            ownReadPosition.store(readPosition + UInt64(size), ordering: .relaxed)
            atomic(Offset.readPosition).store(readPosition + UInt64(size), ordering: .releasing)
            atomic(Offset.recordsRead).wrappingIncrement(ordering: .relaxed)
            atomic(Offset.lastRead).store(Self.monotonicNow(), ordering: .relaxed)
            return true
        }
    }

    /// Sleeps until a record is there, the producer closed, or `timeout` passed; true if a record
    /// is there. After the producer closed it returns at once: check `producerClosed`.
    public func waitForRecord(timeout: Duration) -> Bool {
        // A wake-up left from before is reset first, here rather than after waking: the way from
        // the producer's write to this side running is one system call (poll), not two.
        var value: UInt64 = 0
        _ = Glibc.read(wakeupFD, &value, 8)
        let waiting = atomic32(Offset.consumerWaiting)
        waiting.store(1, ordering: .sequentiallyConsistent)
        if hasRecord || producerClosed {
            waiting.store(0, ordering: .relaxed)
            return hasRecord
        }
        var ready = pollfd(fd: wakeupFD, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(clamping: timeout.milliseconds)
        _ = poll(&ready, 1, max(milliseconds, 0))
        waiting.store(0, ordering: .relaxed)
        return hasRecord
    }

    /// Whether the consumer is asleep in `waitForRecord` (for tests).
    var consumerIsWaiting: Bool { atomic32(Offset.consumerWaiting).load(ordering: .sequentiallyConsistent) != 0 }

    private var hasRecord: Bool {
        atomic(Offset.writePosition).load(ordering: .sequentiallyConsistent) != ownReadPosition.load(ordering: .relaxed)
    }

    /// Counts a time the consumer needed data and had none (a gap in what it sends on).
    public func noteUnderrun() { atomic(Offset.underruns).wrappingIncrement(ordering: .relaxed) }

    /// Counts bytes the consumer sent onward (encoded), for the producer's progress line.
    public func addConsumerOutput(_ bytes: Int) { atomic(Offset.consumerOutputBytes).wrappingIncrement(by: UInt64(bytes), ordering: .relaxed) }

    /// The consumer is done: the producer's writes return `.consumerClosed`.
    public func closeConsumer() { atomic32(Offset.consumerClosed).store(1, ordering: .sequentiallyConsistent) }

    // MARK: Both

    public var producerClosed: Bool { atomic32(Offset.producerClosed).load(ordering: .sequentiallyConsistent) != 0 }
    public var consumerClosed: Bool { atomic32(Offset.consumerClosed).load(ordering: .sequentiallyConsistent) != 0 }

    public var statistics: Statistics {
        let written = atomic(Offset.writePosition).load(ordering: .relaxed)
        let read = atomic(Offset.readPosition).load(ordering: .relaxed)
        return Statistics(recordsWritten: atomic(Offset.recordsWritten).load(ordering: .relaxed), recordsRead: atomic(Offset.recordsRead).load(ordering: .relaxed),
                          overruns: atomic(Offset.overruns).load(ordering: .relaxed), underruns: atomic(Offset.underruns).load(ordering: .relaxed),
                          fill: written >= read ? Int(min(written - read, UInt64(capacity))) : 0,
                          consumerOutputBytes: atomic(Offset.consumerOutputBytes).load(ordering: .relaxed))
    }

    static func align(_ length: Int) -> Int { (length + 15) & ~15 }

    public static func monotonicNow() -> UInt64 { EventLoop.now() }
}

/// A sample ring cannot be made, mapped or read; the sentence says why.
public struct SampleRingError: Error, Sendable, Hashable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
