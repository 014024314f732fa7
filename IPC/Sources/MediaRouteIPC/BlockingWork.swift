import Foundation

/// Runs `work`, which blocks (a poll, a ring wait, a blocking read), on a thread of its own and
/// waits for it. The cooperative pool is only as wide as the machine (two threads on a 2-core
/// runner): blocking one of its threads stalls every task beside it, and two stall them all.
public func onThreadOfItsOwn<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
    }
}
