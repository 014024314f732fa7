import DBus

/// Bounded waits on what proves a thing happened (a signal, a condition on the bus), never sleeps
/// standing in for it.
enum DBusTestWaiting {
    /// The first signal of `stream` satisfying `wanted`, or nil if none came within `limit`.
    static func first(of stream: AsyncStream<DBusSignal>, within limit: Duration,
                      where wanted: @escaping @Sendable (DBusSignal) -> Bool) async throws -> DBusSignal? {
        await withTaskGroup(of: DBusSignal?.self) { group in
            group.addTask {
                for await signal in stream where wanted(signal) { return signal }
                return nil
            }
            group.addTask {
                try? await Task.sleep(for: limit)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    /// Returns once `condition` holds, checking every few milliseconds; throws after `limit`.
    static func until(_ what: String, within limit: Duration = .seconds(10), _ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + limit
        while !(try await condition()) {
            guard ContinuousClock.now < deadline else { throw DBusError(name: "test.Timeout", message: "\(what): not within \(limit)") }
            try await Task.sleep(for: .milliseconds(5))
        }
    }
}
