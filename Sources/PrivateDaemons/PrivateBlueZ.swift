import DBus
import Foundation
import MediaRouteIPC

/// BlueZ's D-Bus API on a private system bus, for the Bluetooth tests: python3-dbusmock with our
/// template modelled on bluetoothd (`Protocols/Bluetooth/Mock/bluez_mediaroute.py`). There is no
/// Bluetooth hardware or kernel support here, so bluetoothd itself cannot run; the driver cannot
/// tell the difference on the bus. Stopped by PID; `stopBlueZ`/`startBlueZ` play bluetoothd
/// leaving and coming back while the bus stays.
public final class PrivateBlueZ: @unchecked Sendable {  // mutated by the test that owns it, one step at a time
    public let bus: PrivateBus
    public var busAddress: String { bus.address }
    private var mock: ChildProcess?
    private var stopped = false
    /// The stand-in's log (every call it answered), for failure messages.
    public var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
    private var logPath: String { bus.directory.path + "/bluez-mock.log" }

    /// Our template, found from this source file (the tests run from the package).
    public static let template = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Protocols/Bluetooth/Mock/bluez_mediaroute.py").path

    private init(bus: PrivateBus) { self.bus = bus }

    public static func start() async throws -> PrivateBlueZ {
        let blueZ = PrivateBlueZ(bus: try await PrivateBus.start())
        do {
            try await blueZ.startBlueZ()
        } catch {
            await blueZ.stop()
            throw error
        }
        return blueZ
    }

    /// Starts the stand-in on the bus and returns once it owns `org.bluez`.
    public func startBlueZ() async throws {
        await stopBlueZ()
        guard FileManager.default.isReadableFile(atPath: Self.template) else { throw PrivateDaemonError("the BlueZ template is missing at \(Self.template)") }
        let watcher = try await DBusConnection.connect(address: bus.address)
        defer { Task { await watcher.close() } }
        let owners = try await watcher.signals(matching: DBusMatchRule(sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus",
                                                                       member: "NameOwnerChanged", arg0: "org.bluez"))
        let log = open(logPath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        defer { close(log) }
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = bus.address
        // Debian's python3-dbusmock is for the system python (the first python3 on PATH may lack it).
        let mock = try ChildProcess(executable: "/usr/bin/python3", arguments: ["-m", "dbusmock", "--system", "--template", Self.template],
                                    environment: environment.map { "\($0.key)=\($0.value)" }, standardOutput: log, standardError: log)
        self.mock = mock
        let owned = Task {
            for await signal in owners where NameOwnerChangedSignal(signal)?.newOwner.isEmpty == false { return true }
            return false
        }
        let deadline = Task {
            try? await Task.sleep(for: .seconds(15))
            owned.cancel()
        }
        defer { deadline.cancel() }
        if try await watcher.nameHasOwner("org.bluez") { return }
        guard await owned.value else {
            let ended = mock.exitIfEnded().map { "it \($0)" } ?? "it did not take org.bluez within 15 s"
            throw PrivateDaemonError("the BlueZ stand-in did not start: \(ended)\n\(self.log)")
        }
    }

    /// Stops the stand-in by its PID: `org.bluez` leaves the bus, as when bluetoothd stops.
    public func stopBlueZ() async {
        guard let mock else { return }
        self.mock = nil
        await mock.terminate(grace: .seconds(5))
    }

    public var pid: Int32? { mock?.pid }

    /// Stops the stand-in and the bus, removing their files.
    public func stop() async {
        guard !stopped else { return }
        stopped = true
        await stopBlueZ()
        await bus.stopFromTask()
    }

    public func stopFromTask() async { await stop() }
}
