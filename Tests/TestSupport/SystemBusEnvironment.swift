import Foundation

/// libavahi-client finds its daemon through `DBUS_SYSTEM_BUS_ADDRESS` alone. A test that connects
/// to a private bus in this process sets it, connects and puts it back, one at a time (suites run
/// in parallel in one process). libdbus reads the address once per process, so one test only may
/// do this (the DACP receiver test); others ask from processes of their own.
public enum SystemBusEnvironment {
    private static let lock = NSLock()

    public static func with<T>(_ address: String, _ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        let previous = getenv("DBUS_SYSTEM_BUS_ADDRESS").map { String(cString: $0) }
        setenv("DBUS_SYSTEM_BUS_ADDRESS", address, 1)
        defer {
            if let previous { setenv("DBUS_SYSTEM_BUS_ADDRESS", previous, 1) } else { unsetenv("DBUS_SYSTEM_BUS_ADDRESS") }
        }
        return try body()
    }
}
