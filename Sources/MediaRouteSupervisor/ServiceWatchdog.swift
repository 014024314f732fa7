import Glibc
import MediaRouteIPC

/// Sends `WATCHDOG=1` from a timer on the event loop itself, at half the service manager's
/// watchdog interval (as sd_watchdog_enabled(3) advises): a loop that is wedged stops the pings,
/// and systemd kills and restarts the daemon after `WatchdogSec=`.
///
/// It pings for as long as the loop runs, through the daemon's shutdown too (which can take a
/// few seconds of stopping drivers).
public final class ServiceWatchdog: Sendable {
    /// How often the pings go: half of `$WATCHDOG_USEC`.
    public let pingInterval: Duration
    private let notifier: ServiceNotifier
    private let loop: EventLoop

    /// The interval systemd asked for, when it asked this process: `$WATCHDOG_USEC` (microseconds),
    /// for `$WATCHDOG_PID` if set (another PID's watchdog is not ours). Both are then taken out of
    /// the environment, so that drivers started later do not believe they are watched.
    public static func intervalFromEnvironment(keepingEnvironment: Bool = false) -> Duration? {
        let usec = getenv("WATCHDOG_USEC").map { String(cString: $0) }
        let pid = getenv("WATCHDOG_PID").map { String(cString: $0) }
        if !keepingEnvironment {
            unsetenv("WATCHDOG_USEC")
            unsetenv("WATCHDOG_PID")
        }
        guard let usec, let microseconds = UInt64(usec), microseconds > 0 else { return nil }
        if let pid, pid_t(pid) != getpid() { return nil }
        return .microseconds(microseconds)
    }

    /// Starts pinging every `interval / 2` on `loop`, the first ping at once.
    public init(interval: Duration, notifier: ServiceNotifier, loop: EventLoop) {
        self.pingInterval = interval / 2
        self.notifier = notifier
        self.loop = loop
        loop.execute { self.ping() }
    }

    private func ping() {
        notifier.send("WATCHDOG=1")
        _ = loop.schedule(after: pingInterval) { [self] in ping() }
    }
}
