import MediaRouteWire

/// §11.2 volume, for the device's control kind: `volume.set` (absolute only), `volume.change`
/// (absolute and relative, 5 % a step on an absolute device without a step of its own),
/// `volume.get`, and `volume.mute` / `volume.unmute` when it can mute.
struct VolumeChecks {
    let setup: KitSetup
    let report: ConformanceReport
    let section = "§11.2 Volume"

    func run(on driver: DriverUnderTest, route: ActiveRoute) async {
        let device = route.device
        switch device.volumeControl {
        case .absolute:
            await report.check(section, "absolute: volume.set 0.3, then volume.get reads 0.3") {
                _ = try await driver.call(ToDriver.SetVolume(device: device, volume: 0.3))
                return try await reads(driver, device, "0.3") { abs($0 - 0.3) < 0.01 }
            }
            await report.check(section, "absolute: volume.change by 2 raises the level (0.4 with 5 % steps)") {
                _ = try await driver.call(ToDriver.ChangeVolume(device: device, by: 2))
                return try await reads(driver, device, "more than 0.3") { $0 > 0.3 }
            }
            await report.check(section, "absolute: volume.change by -100 clamps to 0") {
                _ = try await driver.call(ToDriver.ChangeVolume(device: device, by: -100))
                return try await reads(driver, device, "0") { $0 == 0 }
            }
        case .relative:
            report.skip(section, "absolute: volume.set, volume.get", because: "\(device.displayName) has relative volume: the supervisor never sends it volume.set")
            await report.check(section, "relative: volume.change by 1 is answered and volume.get reads a level in 0…1") {
                _ = try await driver.call(ToDriver.ChangeVolume(device: device, by: 1))
                let reading = try await driver.call(ToDriver.GetVolume(device: device))
                return (0...1).contains(reading.volume) ? .pass("\(reading.volume)") : .fail("volume.get reads \(reading.volume)")
            }
        case .none:
            report.skip(section, "volume.set, volume.change, volume.get", because: "\(device.displayName) has volumeControl none: the supervisor sends it no volume request")
        }
        guard device.canMute else {
            report.skip(section, "volume.mute / volume.unmute, read back with volume.get", because: "\(device.displayName) cannot mute (canMute false)")
            return
        }
        await report.check(section, "volume.mute / volume.unmute, read back with volume.get") {
            _ = try await driver.call(ToDriver.Mute(device: device))
            let muted = try await driver.call(ToDriver.GetVolume(device: device))
            _ = try await driver.call(ToDriver.Unmute(device: device))
            let unmuted = try await driver.call(ToDriver.GetVolume(device: device))
            guard muted.muted else { return .fail("volume.get says not muted after volume.mute") }
            return unmuted.muted ? .fail("volume.get says muted after volume.unmute") : .pass
        }
    }

    /// `volume.get` after a volume request reads what `expected` says. A device that applies the
    /// request later (a network receiver answering afterwards) may read the old level at first:
    /// it then passes if a `volume.changed` from the driver within a second brings the level,
    /// and the report says it lagged (the supervisor reports what the first read says).
    private func reads(_ driver: DriverUnderTest, _ device: MediaOutputDevice, _ what: String,
                       _ expected: (Float) -> Bool) async throws -> Verdict {
        var mark = driver.events.mark
        let first = try await driver.call(ToDriver.GetVolume(device: device)).volume
        if expected(first) { return .pass("\(first)") }
        let deviceID = device.id
        let deadline = ContinuousClock.now + .seconds(1)
        var latest = first
        while let changed = await driver.events.first(after: mark, within: max(.zero, deadline - ContinuousClock.now),
                                                      where: { $0.method == "volume.changed" && $0.params["device"]?.stringValue == deviceID }) {
            mark = changed.index + 1
            latest = try await driver.call(ToDriver.GetVolume(device: device)).volume
            if expected(latest) { return .pass("volume.get read \(first) at first and \(latest) after the driver's volume.changed: it lags the request") }
        }
        return .fail("volume.get reads \(first)" + (latest == first ? "" : ", then \(latest) after volume.changed") + "; expected \(what)")
    }
}
