import Testing
import TestSupport

extension ReceiverProcess {
    /// The PID the receiver printed last after `prefix` (once it has, since console mark `mark`):
    /// how tests find the child a receiver started for a window.
    func printedPID(after prefix: String, since mark: Int = 0) async throws -> Int32 {
        try await waitFor(prefix, after: mark)
        let output = console.output(after: mark)
        let start = try #require(output.range(of: prefix, options: .backwards)).upperBound
        return try #require(Int32(output[start...].prefix { $0.isNumber }))
    }
}
