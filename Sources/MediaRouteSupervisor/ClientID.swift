import Synchronization

/// One connection to the control socket, for as long as the daemon runs: never reused, unlike
/// the address of the object serving it, so a client that left cannot be mistaken for a new one.
struct ClientID: Hashable, Sendable, CustomStringConvertible {
    private let value: UInt64
    private static let last = Atomic<UInt64>(0)

    static func next() -> ClientID { ClientID(value: last.add(1, ordering: .relaxed).newValue) }

    var description: String { "client \(value)" }
}
