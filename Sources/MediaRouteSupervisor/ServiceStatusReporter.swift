/// Keeps the service manager's `STATUS=` line current: it asks the supervisor for its line once a
/// second and sends it only when it changed, so a busy daemon sends at most one a second and an
/// idle one none.
public final class ServiceStatusReporter: Sendable {
    /// How often the line is looked at.
    public static let period: Duration = .seconds(1)
    private let task: Task<Void, Never>

    /// Sends the current line (unless it is `sent`, the one sent last), then every change.
    public init(supervisor: Supervisor, notifier: ServiceNotifier, sent: String? = nil, period: Duration = ServiceStatusReporter.period) {
        task = Task {
            var sent = sent
            while !Task.isCancelled {
                let line = await supervisor.serviceStatusLine()
                if line != sent, notifier.send("STATUS=" + line) { sent = line }
                try? await Task.sleep(for: period)  // the reporting period itself, not a wait for something
            }
        }
    }

    /// Sends no more lines.
    public func stop() { task.cancel() }
}
