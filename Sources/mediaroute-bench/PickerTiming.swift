import Foundation
import MediaRouteSupervisor

/// Opens a picker until `listed` says the device is in it; returns how long that took. Pickers
/// hear of changes only, so the device must be new to the supervisor. The clock runs in the
/// supervisor, from the picker's opening to its callback, as the raw baselines' runs from their
/// request to the moment its answer is read (see `Supervisor.timed`).
func timeUntilListed(_ supervisor: Supervisor, _ what: String, _ listed: @escaping @Sendable ([PickerEntry]) -> Bool) async throws -> UInt64 {
    let (seen, continuation) = AsyncStream.makeStream(of: UInt64.self, bufferingPolicy: .bufferingOldest(1))
    let (start, picker) = await supervisor.timed { supervisor in
        supervisor.openPicker { entries in if listed(entries) { continuation.yield(now()) } }
    }
    let timeout = Task {
        try await Task.sleep(for: .seconds(20))
        continuation.finish()
    }
    defer { timeout.cancel() }
    var iterator = seen.makeAsyncIterator()
    guard let end = await iterator.next() else { throw BenchmarkError("\(what) was not listed within 20 s") }
    await supervisor.closePicker(picker.id)
    return end - start
}

extension Supervisor {
    /// Runs `body` on the supervisor's executor and returns the clock read as it starts there: an
    /// app's request starts where the supervisor takes it, and the hop from the bench's task to
    /// the supervisor (a thread woken) is the bench's own, as the raw baselines pay none.
    func timed<T: Sendable>(_ body: @Sendable (isolated Supervisor) async throws -> T) async rethrows -> (start: UInt64, result: T) {
        let start = now()
        return (start, try await body(self))
    }
}
