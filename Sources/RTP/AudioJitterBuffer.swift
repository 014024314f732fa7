/// Orders audio packets by RTP sequence and hands them on as soon as each is next: no delay while
/// packets arrive in order; a missing one is waited for a little (it may be late) and then given up
/// as lost, for the decoder to conceal.
public struct AudioJitterBuffer: Sendable {
    /// How long a gap is waited for before the packet is counted lost.
    public var patience: Duration
    private var next: UInt16?
    private var held: [UInt16: RTPPacket] = [:]
    private var gapSince: ContinuousClock.Instant?
    public private(set) var lost = 0
    /// A jump further than this (a sender that restarted, or a stray packet) starts the order again
    /// from the packet, rather than concealing or discarding everything in between.
    public static let resynchronizeDistance = 64

    public init(patience: Duration = .milliseconds(30)) { self.patience = patience }

    public enum Slot: Sendable {
        case packet(RTPPacket)
        /// One packet is missing: conceal a frame.
        case lost
    }

    /// Takes an arriving packet; returns what can be played now, in order.
    public mutating func add(_ packet: RTPPacket, at now: ContinuousClock.Instant = .now) -> [Slot] {
        if let next {
            let distance = packet.sequence.distance(after: next)
            if abs(distance) > Self.resynchronizeDistance {
                if distance > 0 { lost += distance }
                held.removeAll()
                gapSince = nil
                self.next = packet.sequence
            } else if distance < 0 {
                return []  // late: its place was already played or concealed
            }
        } else {
            next = packet.sequence
        }
        held[packet.sequence] = packet
        return drain(now)
    }

    /// Called now and then while nothing arrives: gives up on a gap waited for long enough.
    public mutating func poll(at now: ContinuousClock.Instant = .now) -> [Slot] { drain(now) }

    private mutating func drain(_ now: ContinuousClock.Instant) -> [Slot] {
        var slots: [Slot] = []
        while let expected = next {
            if let packet = held.removeValue(forKey: expected) {
                slots.append(.packet(packet))
                next = expected &+ 1
                gapSince = nil
                continue
            }
            guard !held.isEmpty else { break }
            let since = gapSince ?? now
            gapSince = since
            guard now - since >= patience || held.count > 50 else { break }
            slots.append(.lost)
            lost += 1
            next = expected &+ 1
        }
        return slots
    }
}
