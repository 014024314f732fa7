import Foundation
import MediaRouteSupervisor

/// Opens a picker until `listed` says the device is in it; returns how long that took. Pickers
/// hear of changes only, so the device must be new to the supervisor. The clock stops in the
/// picker's callback, as the raw baselines' stops the moment their answer is read.
func timeUntilListed(_ supervisor: Supervisor, _ what: String, _ listed: @escaping @Sendable ([PickerEntry]) -> Bool) async throws -> UInt64 {
    let (seen, continuation) = AsyncStream.makeStream(of: UInt64.self, bufferingPolicy: .bufferingOldest(1))
    let start = now()
    let picker = await supervisor.openPicker { entries in if listed(entries) { continuation.yield(now()) } }
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
