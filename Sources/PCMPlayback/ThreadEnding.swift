import Synchronization

/// How a sending thread ended, set once by the thread and awaited by any number of tasks: each
/// waiter is resumed when it is set, and a waiter arriving later gets it at once.
public final class ThreadEnding<Value: Sendable>: Sendable {
    private let state = Mutex<(value: Value?, waiters: [CheckedContinuation<Value, Never>])>((nil, []))

    public init() {}

    /// The value, nil until it is set.
    public var current: Value? { state.withLock { $0.value } }

    /// Sets the value (a second call is ignored) and resumes every waiter.
    public func set(_ value: Value) {
        let waiters = state.withLock { state -> [CheckedContinuation<Value, Never>] in
            guard state.value == nil else { return [] }
            state.value = value
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: value) }
    }

    /// The value, once it is set.
    public var value: Value {
        get async {
            await withCheckedContinuation { continuation in
                let value = state.withLock { state -> Value? in
                    if state.value == nil { state.waiters.append(continuation) }
                    return state.value
                }
                if let value { continuation.resume(returning: value) }
            }
        }
    }
}
