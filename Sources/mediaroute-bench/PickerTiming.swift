import Foundation
import MediaRouteSupervisor

/// Opens a picker until `listed` says the device is in it; returns how long that took. Pickers
/// hear of changes only, so the device must be new to the supervisor.
func timeUntilListed(_ supervisor: Supervisor, _ what: String, _ listed: @escaping @Sendable ([PickerEntry]) -> Bool) async throws -> UInt64 {
    let seen = Flag()
    let start = now()
    let picker = await supervisor.openPicker { entries in if listed(entries) { seen.set() } }
    let deadline = ContinuousClock.now + .seconds(20)
    while !seen.isSet {
        guard ContinuousClock.now < deadline else { throw BenchmarkError("\(what) was not listed within 20 s") }
        try await Task.sleep(for: .microseconds(200))
    }
    let elapsed = now() - start
    await supervisor.closePicker(picker.id)
    return elapsed
}
