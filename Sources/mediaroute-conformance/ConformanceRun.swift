import MediaRouteIPC
import MediaRouteWire

/// The whole walk through IPC/README.md on one driver: first the hello as a fresh driver sends it
/// (read raw, §4), then the well-formed conversation on one
/// driver process (handshake, heartbeats, discovery, activation and pairing, sessions, volume,
/// data, streams, deactivation, cancellation, end of file), then the faults that need a fresh
/// process each (late and missing hello answers, closing mid-request, malformed input).
struct ConformanceRun {
    let setup: KitSetup
    let report: ConformanceReport

    func run() async {
        let sessions = SessionNamer()
        await HandshakeChecks(setup: setup, report: report).helloAsSent()
        do {
            try await DriverUnderTest.with(setup) { driver in
                report.record(CheckResult(section: "§4 Handshake", clause: "the driver sends hello first and the handshake completes within 5 s",
                                          outcome: .pass, detail: "", seconds: 0))
                let handshake = HandshakeChecks(setup: setup, report: report)
                await handshake.run(on: driver)
                await handshake.heartbeats(on: driver, when: "after the handshake")
                let devices = await DiscoveryChecks(setup: setup, report: report).run(on: driver)
                let usable = await ActivationChecks(setup: setup, report: report, sessions: sessions).run(on: driver, devices: devices)
                await routeChecks(driver, usable, sessions)
                _ = try? await driver.call(ToDriver.StopDiscovery())
                await CancellationChecks(setup: setup, report: report).run(on: driver)
                await handshake.heartbeats(on: driver, when: "after every other request")
                await ProcessChecks(setup: setup, report: report).exitsAtEndOfFile(driver)
            }
        } catch {
            report.record(CheckResult(section: "§4 Handshake", clause: "the driver sends hello first and the handshake completes within 5 s",
                                      outcome: .fail, detail: "\(error)", seconds: 0))
        }
        await ProcessChecks(setup: setup, report: report).run()
        await MalformedInputChecks(setup: setup, report: report).run()
    }

    /// Sessions, volume, data and streams on the first device that activated, then its deactivation.
    private func routeChecks(_ driver: DriverUnderTest, _ usable: MediaOutputDevice?, _ sessions: SessionNamer) async {
        let skipped = ["§11.2 Sessions and playback", "§11.2 Volume", "§11.2 Data", "§11.5 and §13 Sample streams", "§11.2 Deactivation"]
        guard let usable else {
            skipped.forEach { report.skip($0, "every check of this section", because: "no device activated") }
            return
        }
        let route: ActiveRoute
        do {
            route = try await ActiveRoute.activate(usable, on: driver, setup: setup, sessions: sessions)
        } catch {
            report.record(CheckResult(section: "§11.2 Activation and pairing", clause: "the device chosen for sessions (\(usable.displayName)) activates again",
                                      outcome: .fail, detail: "\(error)", seconds: 0))
            skipped.forEach { report.skip($0, "every check of this section", because: "\(usable.displayName) did not activate again") }
            return
        }
        let sessionChecks = SessionChecks(setup: setup, report: report)
        await sessionChecks.run(on: driver, route: route)
        await VolumeChecks(setup: setup, report: report).run(on: driver, route: route)
        await StreamChecks(setup: setup, report: report).run(on: driver, route: route)
        await sessionChecks.deactivate(driver, route: route)
    }
}
