import Foundation

/// Runs `work`, which blocks (a poll, a ring wait, a sleeping consumer), on a thread of its own.
/// The cooperative pool is only as wide as the machine (two threads here): a test that blocks one
/// of them stalls every test running beside it, and two such tests stall the whole suite.
public func onThreadOfItsOwn<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
    }
}
