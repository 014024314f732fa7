import Glibc
import Synchronization

/// The file descriptors that arrived with one message, in the order the sender listed them.
///
/// The receiver owns them: `take(_:)` hands one over for keeping; whatever is not taken is
/// closed when this object goes away, so an ignored descriptor can never leak.
public final class ReceivedDescriptors: Sendable {
    private let descriptors: Mutex<[Int32?]>

    public init(_ descriptors: [Int32]) { self.descriptors = Mutex(descriptors.map { $0 }) }

    public static let none = ReceivedDescriptors([])

    public var count: Int { descriptors.withLock { $0.count } }

    /// Takes ownership of the descriptor at `index` (the index the message names).
    public func take(_ index: Int) throws(RPCError) -> Int32 {
        let result: Result<Int32, RPCError> = descriptors.withLock { list in
            guard index >= 0, index < list.count else {
                return .failure(RPCError(.descriptorMismatch, "the message names file descriptor #\(index) but its frame carried \(list.count)"))
            }
            guard let fd = list[index] else {
                return .failure(RPCError(.descriptorMismatch, "file descriptor #\(index) of this message was already taken"))
            }
            list[index] = nil
            return .success(fd)
        }
        return try result.get()
    }

    /// Closes every descriptor not yet taken.
    public func closeRemaining() {
        let remaining = descriptors.withLock { list in
            defer { list = list.map { _ in nil } }
            return list.compactMap { $0 }
        }
        for fd in remaining { close(fd) }
    }

    deinit { closeRemaining() }
}
