import Synchronization

/// The recorders of a private sound server's sink monitor (parec, pw-record): each started and
/// waited for until it records, and stopped by PID, one at a time or all at the server's stop.
final class SinkRecorders: Sendable {
    private let running = Mutex<[ConsoleProcess]>([])

    /// Starts a recorder writing `path` and returns once it prints `ready` (its stream records).
    func start(_ executable: String, _ arguments: [String], environment: [String: String], path: String, ready: String) async throws -> ConsoleProcess {
        let recorder = try ConsoleProcess(executable, arguments, environment: environment, logPath: path + ".log")
        running.withLock { $0.append(recorder) }
        try await recorder.waitFor(ready, seconds: 15)
        return recorder
    }

    /// Stops `recorder` by PID; what it wrote is complete once this returns.
    func finish(_ recorder: ConsoleProcess) async {
        await recorder.stop()
        running.withLock { $0.removeAll { $0 === recorder } }
    }

    /// Stops every recorder still running.
    func stopAll() async {
        for recorder in running.withLock({ list in defer { list = [] }; return list }) { await recorder.stop() }
    }
}
