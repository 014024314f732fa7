import Foundation
import MediaRouteIPC

/// A route whose device went away on its own (rebooted, out of range, its driver crashed), or
/// whose daemon restarted, waiting for the device to come back: the route stays listed as
/// reconnecting until `until`, and is activated again by itself when its driver finds the device.
struct ReconnectWait {
    /// When the wait ends (wall clock, for people and the saved routes).
    let until: Date
    /// Why the device went away, in a sentence.
    let why: String
    /// Ends the wait at `until`.
    var deadline: EventLoop.TimerHandle?
    /// Tries again while the device is listed but did not activate (it was still starting).
    var retry: EventLoop.TimerHandle?
    var isAttempting = false

    /// "14:05", local time: when people read it.
    var untilText: String {
        let formatter = DateFormatter()
        formatter.dateFormat = "HH:mm"
        return formatter.string(from: until)
    }
}
