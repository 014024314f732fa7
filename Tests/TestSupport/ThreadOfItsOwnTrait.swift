import Testing

/// Runs each test it marks (or each test of a suite it marks) on a thread of its own
/// (`DedicatedThreadExecutor`), for tests that block or compute for seconds without awaiting. On
/// the cooperative pool (two threads on a 2-CPU runner) two of them at once stalled every other
/// test for seconds: a driver's 5 s handshake and an HTTP answer's deadline passed while the tasks
/// that would have met them waited for a thread.
public struct ThreadOfItsOwnTrait: TestTrait, SuiteTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? nil : self
    }

    public func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        let executor = DedicatedThreadExecutor()
        defer { executor.stop() }
        try await withTaskExecutorPreference(executor) { try await function() }
    }
}

extension Trait where Self == ThreadOfItsOwnTrait {
    /// A test that blocks or computes for seconds: it gets a thread of its own.
    public static var onAThreadOfItsOwn: Self { Self() }
}
