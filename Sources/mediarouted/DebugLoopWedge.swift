import Glibc
import Logging
import MediaRouteIPC

/// Debug builds only: SIGUSR2 blocks the event loop's thread for
/// `$MEDIAROUTE_DEBUG_WEDGE_MILLISECONDS` (default 2000), as a wedged loop would, so that a test can
/// see the watchdog pings stop while everything else in the process runs. Release builds leave
/// SIGUSR2 alone (its default action ends the process).
enum DebugLoopWedge {
    #if DEBUG
    static let signals: [Int32] = [SIGUSR2]
    #else
    static let signals: [Int32] = []
    #endif

    /// Takes `signal` when it is the wedge's (true), blocking `loop` for a while.
    static func handle(_ signal: Int32, loop: EventLoop, logger: Logger) -> Bool {
        #if DEBUG
        guard signal == SIGUSR2 else { return false }
        let milliseconds = getenv("MEDIAROUTE_DEBUG_WEDGE_MILLISECONDS").flatMap { UInt32(String(cString: $0)) } ?? 2000
        logger.warning("signal \(signal) (debug build): blocking the event loop for \(milliseconds) ms")
        loop.execute { usleep(milliseconds * 1000) }
        return true
        #else
        return false
        #endif
    }
}
