import Synchronization

/// The audio packets sent lately, by sequence number, so that a receiver's resend request can be
/// answered; bounded (the oldest are forgotten), shared between the sending thread and the control
/// channel's event loop. One block of memory made up front, each packet copied into its slot: the
/// sending thread records 125 packets a second without allocating.
public final class PacketHistory: Sendable {
    public let capacity: Int
    /// The largest packet a slot holds: an RTP header and a full ALAC frame.
    public static let slotBytes = RTPAudioPacket.headerBytes + ALACFrame.uncompressedSize
    /// Per slot: the sequence number held and its length (0: empty).
    private let slots: Mutex<[(sequence: UInt16, length: Int)]>
    /// The slots' bytes. nonisolated(unsafe): read and written only while `slots` is locked.
    private nonisolated(unsafe) let storage: UnsafeMutableRawBufferPointer

    /// `capacity` packets: 512 is about 4 s of audio, more than any receiver's resend window.
    public init(capacity: Int = 512) {
        self.capacity = max(1, capacity)
        storage = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, capacity) * Self.slotBytes, alignment: 16)
        slots = Mutex(Array(repeating: (0, 0), count: max(1, capacity)))
    }

    deinit { storage.deallocate() }

    /// Keeps a copy of `packet` (up to `slotBytes` of it) as the one sent with `sequence`.
    public func record(sequence: UInt16, bytes packet: UnsafeRawBufferPointer) {
        let slot = Int(sequence) % capacity, length = min(packet.count, Self.slotBytes)
        guard let source = packet.baseAddress, length > 0 else { return }
        slots.withLock { slots in
            (storage.baseAddress! + slot * Self.slotBytes).copyMemory(from: source, byteCount: length)
            slots[slot] = (sequence, length)
        }
    }

    public func record(sequence: UInt16, bytes: [UInt8]) {
        bytes.withUnsafeBytes { record(sequence: sequence, bytes: $0) }
    }

    /// The packet sent with `sequence`, if still held.
    public func packet(_ sequence: UInt16) -> [UInt8]? {
        slots.withLock { slots in
            let slot = Int(sequence) % capacity
            guard slots[slot].length > 0, slots[slot].sequence == sequence else { return nil }
            return Array(UnsafeRawBufferPointer(start: storage.baseAddress! + slot * Self.slotBytes, count: slots[slot].length))
        }
    }
}
