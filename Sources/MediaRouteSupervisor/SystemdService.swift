import Logging
import Synchronization
import MediaRouteIPC

/// The daemon as a `Type=notify` systemd service: the watchdog pings from the event loop as soon as
/// the daemon starts, `READY=1` once the control socket listens, `STATUS=` lines while it runs, and
/// `STOPPING=1` when it begins to stop. Nothing at all when no service manager started it.
public final class SystemdService: Sendable {
    private let notifier: ServiceNotifier
    public let watchdog: ServiceWatchdog?
    private let status = Mutex<ServiceStatusReporter?>(nil)

    /// The link to the service manager named in the environment (`NOTIFY_SOCKET`, `WATCHDOG_USEC`,
    /// `WATCHDOG_PID`, then taken out of it so drivers do not inherit them), its watchdog pinging on
    /// `loop`; nil when there is none. A `NOTIFY_SOCKET` that cannot be used is logged and ignored.
    public static func fromEnvironment(loop: EventLoop, logger: Logger) -> SystemdService? {
        let interval = ServiceWatchdog.intervalFromEnvironment()
        do {
            guard let notifier = try ServiceNotifier.fromEnvironment() else { return nil }
            return SystemdService(notifier: notifier, watchdogInterval: interval, loop: loop)
        } catch {
            logger.warning("\(error)")
            return nil
        }
    }

    init(notifier: ServiceNotifier, watchdogInterval: Duration?, loop: EventLoop) {
        self.notifier = notifier
        watchdog = watchdogInterval.map { ServiceWatchdog(interval: $0, notifier: notifier, loop: loop) }
    }

    /// Says the daemon is ready (its control socket accepts clients), then keeps `STATUS=` current.
    public func ready(supervisor: Supervisor) async {
        let line = await supervisor.serviceStatusLine()
        notifier.send("READY=1\nSTATUS=" + line)
        status.withLock { $0 = ServiceStatusReporter(supervisor: supervisor, notifier: notifier, sent: line) }
    }

    /// Says the daemon is stopping (its drivers next), so that systemd shows it deactivating.
    public func stopping() {
        status.withLock { $0?.stop() }
        notifier.send("STOPPING=1\nSTATUS=stopping every driver")
    }
}
