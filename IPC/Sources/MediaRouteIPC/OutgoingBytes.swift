import Glibc

/// The bytes of frames waiting to be written, in memory of their own.
///
/// Every message is encoded into this a few bytes at a time; as an array, each append paid for a
/// uniqueness check and a generic copy, a tenth of the encoding. Owned by one `OutgoingBuffer`
/// (a class only so that its memory is freed with it), touched only on the connection's loop.
final class OutgoingBytes: JSONOutput {
    @exclusivity(unchecked) private var base: UnsafeMutablePointer<UInt8>
    @exclusivity(unchecked) private(set) var count = 0
    @exclusivity(unchecked) private var capacity: Int
    /// Kept after a flush up to this size, so a steady flow allocates nothing; a burst's is freed.
    private static let retainedCapacity = 1 << 20
    private static let initialCapacity = 256

    init() {
        capacity = Self.initialCapacity
        base = .allocate(capacity: capacity)
    }

    deinit { base.deallocate() }

    func write(_ byte: UInt8) {
        if count == capacity { grow(toHold: count + 1) }
        base[count] = byte
        count += 1
    }

    func write(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let source = bytes.baseAddress else { return }
        if capacity - count < bytes.count { grow(toHold: count + bytes.count) }
        (base + count).update(from: source, count: bytes.count)
        count += bytes.count
    }

    /// Replaces the byte at `index` (a frame's length, once its body is written).
    func set(_ byte: UInt8, at index: Int) {
        precondition(index < count)
        base[index] = byte
    }

    /// Drops everything from `index` on (a frame that may not go).
    func truncate(to index: Int) {
        precondition(index <= count)
        count = index
    }

    /// The bytes from `start` to `end`, to write in place; valid until the next change.
    func bytes(_ start: Int, _ end: Int) -> UnsafeRawBufferPointer {
        precondition(0 <= start && start <= end && end <= count)
        return UnsafeRawBufferPointer(start: base + start, count: end - start)
    }

    /// Empties the buffer, freeing memory a burst grew it to.
    func removeAll() {
        count = 0
        if capacity > Self.retainedCapacity { reallocate(Self.initialCapacity) }
    }

    private func grow(toHold needed: Int) {
        reallocate(max(needed, capacity * 2))
    }

    private func reallocate(_ newCapacity: Int) {
        let new = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        new.initialize(from: base, count: count)
        base.deallocate()
        base = new
        capacity = newCapacity
    }
}
