/// Runs `body`, then `tearDown`, whether `body` returns or throws: what a test or a benchmark
/// started is always stopped.
public func withTearDown<T>(_ body: () async throws -> T, tearDown: () async -> Void) async throws -> T {
    let result: T
    do {
        result = try await body()
    } catch {
        await tearDown()
        throw error
    }
    await tearDown()
    return result
}
