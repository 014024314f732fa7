import Foundation
import MediaRouteIPC
import Synchronization

/// One notification a driver sent, in arrival order.
struct DriverEvent: Sendable {
    let index: Int
    let method: String
    let params: JSONObject
    let at: ContinuousClock.Instant
    /// The kit's requests still unanswered when this arrived: read on the loop, in the order the
    /// connection handles what the driver sent, so an answer and a notification are ordered as
    /// they came on the wire (see `DriverUnderTest.callMarkingAnswer`).
    let unansweredRequests: Int

    /// The params as JSON text, for a sentence.
    var paramsText: String { String(decoding: JSONWriter.encode(.object(params)), as: UTF8.self) }
}

/// Everything the driver sent without being asked (its notifications), recorded on the loop in
/// arrival order, and waited for by the checks: a waiter is resumed by the event it wants or by
/// its deadline, never by polling.
final class DriverEventLog: Sendable {
    private struct Waiter {
        let after: Int
        let matches: @Sendable (DriverEvent) -> Bool
        let continuation: CheckedContinuation<DriverEvent?, Never>
    }
    private struct State {
        var events: [DriverEvent] = []
        var waiters: [UInt64: Waiter] = [:]
        var nextWaiter: UInt64 = 0
        /// Waiters whose deadline passed before they were registered.
        var expired: Set<UInt64> = []
    }
    private let state = Mutex(State())

    /// Called by the connection's notification handlers, on the loop.
    func append(method: String, params: JSONObject, unansweredRequests: Int) {
        let resumed: [(CheckedContinuation<DriverEvent?, Never>, DriverEvent)] = state.withLock { state in
            let event = DriverEvent(index: state.events.count, method: method, params: params, at: .now, unansweredRequests: unansweredRequests)
            state.events.append(event)
            var resumed: [(CheckedContinuation<DriverEvent?, Never>, DriverEvent)] = []
            for (id, waiter) in state.waiters where event.index >= waiter.after && waiter.matches(event) {
                state.waiters[id] = nil
                resumed.append((waiter.continuation, event))
            }
            return resumed
        }
        for (continuation, event) in resumed { continuation.resume(returning: event) }
    }

    /// The index the next event will get: a mark to wait "after".
    var mark: Int { state.withLock { $0.events.count } }

    /// Events from `mark` on.
    func events(from mark: Int = 0) -> [DriverEvent] { state.withLock { Array($0.events.dropFirst(mark)) } }

    /// The first event at or after `mark` that `matches`, waiting at most `bound` for it.
    func first(after mark: Int, within bound: Duration, where matches: @escaping @Sendable (DriverEvent) -> Bool) async -> DriverEvent? {
        let id: UInt64 = state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        let timer = Task {
            try await Task.sleep(for: bound)
            self.expire(id)
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { continuation in
            let found: DriverEvent?? = state.withLock { state in
                if let event = state.events.dropFirst(mark).first(where: matches) { return .some(event) }
                if state.expired.remove(id) != nil { return .some(nil) }
                state.waiters[id] = Waiter(after: mark, matches: matches, continuation: continuation)
                return .none
            }
            if let found { continuation.resume(returning: found) }
        }
    }

    /// The first event of `method` (and about `session`, when given) at or after `mark`.
    func first(_ methods: Set<String>, session: String? = nil, after mark: Int, within bound: Duration) async -> DriverEvent? {
        await first(after: mark, within: bound) { event in
            methods.contains(event.method) && (session == nil || event.params["session"]?.stringValue == session)
        }
    }

    private func expire(_ id: UInt64) {
        let waiter: Waiter? = state.withLock { state in
            guard let waiter = state.waiters.removeValue(forKey: id) else {
                state.expired.insert(id)
                return nil
            }
            return waiter
        }
        waiter?.continuation.resume(returning: nil)
    }
}
