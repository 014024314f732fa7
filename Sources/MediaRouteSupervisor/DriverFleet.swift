import Foundation
import MediaRouteWire

/// The drivers the supervisor knows: one record per manifest, in manifest order, and the manifests
/// it refused. Re-reading the manifests keeps each record (and its process) whose protocol is still
/// served, so an edited manifest applies from the driver's next start.
final class DriverFleet {
    private(set) var records: [DriverRecord] = []
    /// Manifests that cannot be used, with the reason.
    private(set) var refused: [DriverManifest.Problem] = []
    /// Where manifests are read from, and what the daemon's configuration says over them: both
    /// may change (SIGHUP), and apply at the next `load`.
    var directories: [String]
    var settings: DriverSettings

    init(directories: [String], settings: DriverSettings) {
        self.directories = directories
        self.settings = settings
    }

    /// Reads every manifest; returns the records no longer served by any (their drivers are to stop).
    @discardableResult
    func load() -> [DriverRecord] {
        let (read, problems) = DriverManifest.load(from: directories)
        let manifests = read.map { $0.configured(by: settings) }
        refused = problems
        let previous = records
        records = manifests.map { manifest in
            guard let kept = previous.first(where: { $0.id == manifest.protocolID }) else { return DriverRecord(manifest: manifest) }
            kept.update(manifest)
            return kept
        }
        return previous.filter { old in !records.contains { $0 === old } }
    }

    /// The protocol drivers: what pickers discover with and routes go through.
    var drivers: [DriverRecord] { records.filter { $0.manifest.kind == .protocolDriver } }

    func record(_ protocolID: String) -> DriverRecord? { records.first { $0.id == protocolID } }

    /// The NowPlaying extension that makes `application`'s remote sessions.
    func remoteMediaExtension(of application: String) -> DriverRecord? {
        records.first { $0.manifest.kind == .remoteMediaExtension(application: application) }
    }

    /// The record, or an error an operator can act on.
    func require(_ protocolID: String) throws(MediaDeviceError) -> DriverRecord {
        guard let record = record(protocolID) else {
            throw MediaDeviceError(.deviceNotFound, "no driver serves \(protocolID); run `mediaroute drivers` to see them")
        }
        return record
    }

    /// What `drivers` shows, refused manifests last.
    func statuses(disabled: Set<String>) -> [DriverStatus] {
        records.map { record in
            var pid: Int32?, uptime: Duration?
            let state: DriverStatus.State
            switch record.phase {
            case _ where settings.isDisabled(record.id): state = .disabledByConfiguration
            case _ where disabled.contains(record.id): state = .disabled
            case .stopped: state = .stopped
            case .starting: state = .starting
            case .running(let process):
                state = .running
                pid = process.pid
                uptime = ContinuousClock.now - process.startedAt
            case .backingOff(let until): state = .restarting(after: max(.zero, until - ContinuousClock.now))
            case .failed(let why): state = .failed(why)
            case .refused(let why): state = .refused(why)
            }
            return DriverStatus(protocolID: record.id, displayName: record.manifest.displayName, manifestPath: record.manifest.path,
                                state: state, pid: pid, restarts: record.restarts, uptime: uptime, lastExit: record.lastExit,
                                deviceCount: record.devices.count, lastDiscoveryError: record.lastDiscoveryError)
        } + refused.map {
            DriverStatus(protocolID: "-", displayName: "-", manifestPath: $0.path, state: .refused($0.reason), pid: nil,
                         restarts: 0, uptime: nil, lastExit: nil, deviceCount: 0, lastDiscoveryError: nil)
        }
    }
}
