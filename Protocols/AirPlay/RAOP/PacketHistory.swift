import Synchronization

/// The audio packets sent lately, by sequence number, so that a receiver's resend request can be
/// answered; bounded (the oldest are forgotten), shared between the sending task and the control
/// channel's event loop.
public final class PacketHistory: Sendable {
    public let capacity: Int
    private let state: Mutex<State>

    private struct State {
        var slots: [(sequence: UInt16, bytes: [UInt8])?]
    }

    /// `capacity` packets: 512 is about 4 s of audio, more than any receiver's resend window.
    public init(capacity: Int = 512) {
        self.capacity = max(1, capacity)
        state = Mutex(State(slots: Array(repeating: nil, count: max(1, capacity))))
    }

    public func record(sequence: UInt16, bytes: [UInt8]) {
        state.withLock { $0.slots[Int(sequence) % capacity] = (sequence, bytes) }
    }

    /// The packet sent with `sequence`, if still held.
    public func packet(_ sequence: UInt16) -> [UInt8]? {
        state.withLock { state in
            guard let slot = state.slots[Int(sequence) % capacity], slot.sequence == sequence else { return nil }
            return slot.bytes
        }
    }

    public func removeAll() {
        state.withLock { $0.slots = Array(repeating: nil, count: capacity) }
    }
}
