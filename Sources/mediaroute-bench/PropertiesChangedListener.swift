import CDBus
import Foundation

/// A client on the bus as a desktop's media widget is one: its own libdbus connection subscribed
/// to MPRIS `PropertiesChanged` with a match rule, read by a thread of its own with blocking reads.
/// It notes when each signal's title arrived (monotonic nanoseconds, taken as the message is
/// popped, before it is read), ours and the raw baseline's alike, and wakes whoever waits for it.
final class PropertiesChangedListener: @unchecked Sendable {  // the connection is the reading thread's alone until it ends; `arrivals` is behind `condition`
    private let connection: RawBusConnection
    private let condition = NSCondition()
    private var arrivals: [String: UInt64] = [:]
    private var stopping = false
    private let ended = DispatchSemaphore(value: 0)

    init(address: String) throws {
        connection = try RawBusConnection(address: address)
        do { try connection.addMatch(RawMPRISSignal.matchRule) } catch {
            connection.close()
            throw error
        }
        let thread = Thread { [self] in read() }
        thread.name = "bus client"
        thread.start()
    }

    /// When the signal carrying `title` arrived; waits for it up to `timeout`, nil if it did not come.
    func arrival(of title: String, timeout: Duration) -> UInt64? {
        let deadline = Date().addingTimeInterval(Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18)
        condition.lock()
        defer { condition.unlock() }
        while arrivals[title] == nil, !stopping, condition.wait(until: deadline) {}
        return arrivals.removeValue(forKey: title)
    }

    /// Ends the reading thread and closes the connection.
    func stop() {
        condition.lock()
        let first = !stopping
        stopping = true
        condition.broadcast()
        condition.unlock()
        guard first else { return }
        ended.wait()
        connection.close()
    }

    private func read() {
        defer { ended.signal() }
        while !isStopping {
            // Blocks until the bus's socket has something (or 50 ms pass, to see `stopping`).
            guard dbus_connection_read_write(connection.pointer, 50) != 0 else { return }
            while let message = dbus_connection_pop_message(connection.pointer) {
                let arrived = now()
                if let title = RawMPRISSignal.title(of: message) {
                    condition.lock()
                    arrivals[title] = arrived
                    condition.broadcast()
                    condition.unlock()
                }
                dbus_message_unref(message)
            }
        }
    }

    private var isStopping: Bool {
        condition.lock()
        defer { condition.unlock() }
        return stopping
    }
}
