import MediaRouteIPC
import MediaRouteWire

/// Everything the supervisor knows about one driver across its restarts. Not Sendable: it lives
/// in the supervisor's `DriverFleet` and is touched only on the supervisor's executor.
final class DriverRecord {
    enum Phase {
        case stopped
        case starting
        case running(DriverProcess)
        case backingOff(until: ContinuousClock.Instant)
        case failed(String)
        /// A configuration error (the driver names another protocol than its manifest): not
        /// retried until the manifest changes or the operator enables it again.
        case refused(String)
    }

    private(set) var manifest: DriverManifest
    var phase = Phase.stopped
    var budget: RestartBudget
    var restarts = 0
    var lastExit: String?
    var lastDiscoveryError: String?
    var isDiscovering = false
    /// A `discovery.start` on its way: a second picker waits for it instead of sending another.
    var discoveryStart: Task<Void, Never>?
    var startTask: Task<DriverProcess, Error>?
    var heartbeat: Task<Void, Never>?
    var idleTimer: EventLoop.TimerHandle?
    var restartTimer: EventLoop.TimerHandle?
    private(set) var devices: [String: MediaOutputDevice] = [:]
    private var deviceOrder: [String] = []
    private var floodWindowStart = ContinuousClock.now
    private var floodCount = 0
    /// Messages handled from the driver, ever: a driver still talking is not hung.
    private(set) var messagesReceived = 0

    var id: String { manifest.protocolID }

    init(manifest: DriverManifest) {
        self.manifest = manifest
        self.budget = RestartBudget(policy: manifest.restart)
    }

    /// A re-read manifest for the same protocol: used from the next start on; a refusal is lifted.
    func update(_ manifest: DriverManifest) {
        guard manifest != self.manifest else { return }
        self.manifest = manifest
        budget = RestartBudget(policy: manifest.restart)
        if case .refused = phase { phase = .stopped }
    }

    var process: DriverProcess? { if case .running(let process) = phase { process } else { nil } }

    var orderedDevices: [MediaOutputDevice] { deviceOrder.compactMap { devices[$0] } }

    func upsert(_ device: MediaOutputDevice) {
        if devices.updateValue(device, forKey: device.id) == nil { deviceOrder.append(device.id) }
    }

    func remove(_ id: String) -> Bool {
        guard devices.removeValue(forKey: id) != nil else { return false }
        deviceOrder.removeAll { $0 == id }
        return true
    }

    func replaceDevices(_ list: [MediaOutputDevice]) {
        clearDevices()
        list.forEach(upsert)
    }

    func clearDevices() {
        devices.removeAll()
        deviceOrder.removeAll()
    }

    func resetFloodWindow() {
        floodWindowStart = .now
        floodCount = 0
    }

    /// True while the driver stays under `limit` messages per second.
    func countMessage(limit: Int) -> Bool {
        let now = ContinuousClock.now
        if now - floodWindowStart > .seconds(1) {
            floodWindowStart = now
            floodCount = 0
        }
        floodCount += 1
        messagesReceived += 1
        return floodCount <= limit
    }

    func cancelIdleTimer(_ loop: EventLoop) {
        if let idleTimer { loop.cancelTimer(idleTimer) }
        idleTimer = nil
    }

    func cancelTimers(_ loop: EventLoop) {
        cancelIdleTimer(loop)
        if let restartTimer { loop.cancelTimer(restartTimer) }
        restartTimer = nil
        heartbeat?.cancel()
    }
}
