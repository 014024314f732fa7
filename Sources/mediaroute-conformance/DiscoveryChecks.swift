import MediaRouteIPC
import MediaRouteWire

/// §11.2 discovery: `discovery.start` and `discovery.stop` are answered, and what the driver then
/// reports (`device.found`, `device.lost`, `devices.updated`, `discovery.failed`) is consistent:
/// every device valid per §11.1, of the driver's own protocol, never lost before it was found,
/// and found again under the same id after discovery stops and starts.
struct DiscoveryChecks {
    let setup: KitSetup
    let report: ConformanceReport
    let section = "§11.2 Discovery"
    static let reports: Set<String> = ["device.found", "devices.updated", "device.lost", "discovery.failed"]

    /// Runs discovery twice and returns the devices found (in the order first found), with
    /// discovery left running, as a picker left open leaves it.
    func run(on driver: DriverUnderTest) async -> [MediaOutputDevice] {
        let firstMark = driver.events.mark
        let started = await report.check(section, "discovery.start is answered") {
            _ = try await driver.call(ToDriver.StartDiscovery())
            return .pass
        }
        guard started.outcome == .pass else { return [] }
        let first = await collect(driver, after: firstMark)
        let failure = await check(driver.events.events(from: firstMark).filter { Self.reports.contains($0.method) }, round: "first discovery")
        if first.isEmpty {
            let why = failure.map { "discovery failed (\($0))" } ?? "the driver found no device within \(setup.discoveryBound)"
            report.skip(section, "devices are found within \(setup.discoveryBound)", because: "\(why); every check that needs a device is skipped")
        } else {
            report.record(CheckResult(section: section, clause: "devices are found within \(setup.discoveryBound)", outcome: .pass,
                                      detail: first.map(\.description).joined(separator: ", "), seconds: 0))
        }
        await report.check(section, "discovery.stop is answered") {
            _ = try await driver.call(ToDriver.StopDiscovery())
            return .pass
        }
        let secondMark = driver.events.mark
        await report.check(section, "discovery.start is answered again after discovery.stop") {
            _ = try await driver.call(ToDriver.StartDiscovery())
            return .pass
        }
        let second = await collect(driver, after: secondMark, expecting: Set(first.map(\.id)))
        await check(driver.events.events(from: secondMark).filter { Self.reports.contains($0.method) }, round: "second discovery")
        if first.isEmpty {
            report.skip(section, "ids are stable across discoveries of the same device (§11.1)", because: "no device was found")
        } else {
            await report.check(section, "ids are stable across discoveries of the same device (§11.1)") {
                var moved: [String] = []
                for device in first {
                    if let again = second.first(where: { $0.displayName == device.displayName }), again.id != device.id {
                        moved.append("\(device.displayName) was \(device.id), then \(again.id)")
                    }
                }
                let missing = first.filter { device in !second.contains { $0.id == device.id } }.map(\.displayName)
                if !moved.isEmpty { return .fail(moved.joined(separator: "; ")) }
                return .pass(missing.isEmpty ? "\(first.count) device(s) found again with the same id"
                             : "not found again within the bound (a network may be slow): \(missing.joined(separator: ", "))")
            }
        }
        return first
    }

    /// Waits for the first device for at most the discovery bound, then for the devices in
    /// `expecting` (or, without, for a quiet second) within the same bound; returns the
    /// devices known at the end, in the order found.
    private func collect(_ driver: DriverUnderTest, after mark: Int, expecting: Set<String> = []) async -> [MediaOutputDevice] {
        let deadline = ContinuousClock.now + setup.discoveryBound
        var position = mark
        var devices: [MediaOutputDevice] = []
        while ContinuousClock.now < deadline {
            let quiet: Duration = devices.isEmpty ? deadline - ContinuousClock.now : .seconds(1)
            guard let event = await driver.events.first(Self.reports, after: position, within: min(quiet, deadline - ContinuousClock.now)) else { break }
            position = event.index + 1
            Self.apply(event, to: &devices)
            if !expecting.isEmpty, expecting.isSubset(of: Set(devices.map(\.id))) { break }
        }
        return devices
    }

    /// The driver's device list after `event`, as the supervisor keeps it; invalid reports change nothing.
    private static func apply(_ event: DriverEvent, to devices: inout [MediaOutputDevice]) {
        switch event.method {
        case "device.found":
            guard let found = try? FromDriver.DeviceFound.decode(event.params).device.device else { return }
            if let index = devices.firstIndex(where: { $0.id == found.id }) { devices[index] = found } else { devices.append(found) }
        case "devices.updated":
            guard let all = try? FromDriver.DevicesUpdated.decode(event.params).devices.map(\.device) else { return }
            devices = all
        case "device.lost":
            guard let id = try? FromDriver.DeviceLost.decode(event.params).id else { return }
            devices.removeAll { $0.id == id }
        default: break
        }
    }

    /// Every report of one round decodes, names the driver's protocol if any, and loses only
    /// devices found before. Returns the error of a `discovery.failed`, a valid report that
    /// explains why no device will come.
    @discardableResult
    private func check(_ events: [DriverEvent], round: String) async -> String? {
        var failure: String?
        await report.check(section, "\(round): device reports match §11.1 and §11.2 (valid devices of this protocol, no device.lost before device.found)") {
            var known: Set<String> = []
            var problems: [String] = []
            for event in events {
                do throws(RPCError) {
                    switch event.method {
                    case "device.found":
                        let reported = try FromDriver.DeviceFound.decode(event.params).device
                        if let claimed = reported.claimedProtocol, claimed != setup.manifest.protocolID {
                            problems.append("device.found \(reported.device.id) claims protocol \(claimed) (a lie: the supervisor kills the driver)")
                        }
                        known.insert(reported.device.id)
                    case "devices.updated":
                        let reported = try FromDriver.DevicesUpdated.decode(event.params).devices
                        if Set(reported.map(\.device.id)).count != reported.count { problems.append("devices.updated lists one id twice") }
                        known = Set(reported.map(\.device.id))
                    case "device.lost":
                        let id = try FromDriver.DeviceLost.decode(event.params).id
                        if known.remove(id) == nil { problems.append("device.lost \(id) before any device.found of it") }
                    case "discovery.failed":
                        failure = "\(try FromDriver.DiscoveryFailed.decode(event.params).error)"
                    default: break
                    }
                } catch {
                    problems.append(error.message)
                }
            }
            return problems.isEmpty ? .pass("\(events.count) report(s)") : .fail(problems.joined(separator: "; "))
        }
        return failure
    }
}
