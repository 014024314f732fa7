import Foundation
import MediaRouteIPC
import MediaRouteWire

/// §11.2 sessions and playback mirroring: `session.start` leads to `session.started` with a valid
/// state, `playback.state` follows at least every second while it plays, `playback.set` answers
/// the state after its changes, and after `session.stop` is answered nothing more is said about it.
struct SessionChecks {
    let setup: KitSetup
    let report: ConformanceReport
    let section = "§11.2 Sessions and playback"
    /// How long the kit listens for messages that must not come (after a stop or a deactivation).
    static let silence: Duration = .milliseconds(1500)
    /// How long the kit watches the playback.state updates of a playing session.
    static let watch: Duration = .seconds(3)
    /// The longest silence allowed between two updates while the session plays: a second, and what
    /// timers and a busy machine add to it.
    static let longestGap: Duration = .milliseconds(1250)

    static let clauses = ["session.start is answered, then session.started with a valid state",
                          "playback.state follows at least every second while the session plays (watched for 3 s)",
                          "playback.set {isPlaying: false} answers a state that is not playing",
                          "playback.set {isPlaying: true, position} answers a playing state",
                          "playback.set {volume: 0.5} answers the state with volume 0.5",
                          "after session.stop is answered, no playback.state or session.failed about the session"]

    func run(on driver: DriverUnderTest, route: ActiveRoute) async {
        guard route.device.capabilities.contains(.urlPlayback) else {
            Self.clauses.forEach { report.skip(section, $0, because: "\(route.device.displayName) has no urlPlayback capability") }
            return
        }
        let mark = driver.events.mark
        let started = await report.check(section, Self.clauses[0]) {
            _ = try await driver.call(ToDriver.StartSession(session: route.session, url: setup.url, application: setup.application))
            guard let outcome = await driver.events.first(["session.started", "session.failed"], session: route.session, after: mark, within: setup.outcomeBound) else {
                return .fail("neither session.started nor session.failed within \(setup.outcomeBound)")
            }
            if outcome.method == "session.failed" {
                let failed = try FromDriver.SessionFailed.decode(outcome.params)
                return .fail("session.failed for \(setup.url): \(failed.error) (give --url a URL the device can play)")
            }
            let state = try FromDriver.SessionStarted.decode(outcome.params).state
            return .pass("state \(state.state.rawValue), position \(state.position)")
        }
        guard started.outcome == .pass else {
            Self.clauses.dropFirst().forEach { report.skip(section, $0, because: "the session did not start") }
            return
        }
        await report.check(section, Self.clauses[1]) {
            try await updatesWhilePlaying(driver, route)
        }
        await setPlayback(driver, route, Self.clauses[2], PlaybackChanges(isPlaying: false)) { $0.isPlaying ? "it is still playing" : nil }
        await setPlayback(driver, route, Self.clauses[3], PlaybackChanges(position: 1, isPlaying: true)) { $0.isPlaying ? nil : "it is not playing" }
        await setPlayback(driver, route, Self.clauses[4], PlaybackChanges(volume: 0.5)) { abs($0.volume - 0.5) < 0.01 ? nil : "its volume is \($0.volume)" }
        await DataChecks(setup: setup, report: report).run(on: driver, route: route)
        await report.check(section, Self.clauses[5]) {
            let (_, after) = try await driver.callMarkingAnswer(ToDriver.StopSession(session: route.session))
            if let late = await driver.events.first(["playback.state", "session.failed", "session.started"], session: route.session, after: after, within: Self.silence) {
                return .fail("\(late.method) \(late.paramsText) after session.stop was answered")
            }
            return .pass
        }
    }

    /// §11.2: watches the session for `watch` and requires each silence between updates (from the
    /// start of the watch to its end) to be at most `longestGap`, as long as the updates say it
    /// plays; an update that says it stopped playing (the media ended) ends the requirement.
    private func updatesWhilePlaying(_ driver: DriverUnderTest, _ route: ActiveRoute) async throws -> Verdict {
        let start = ContinuousClock.now
        let end = start + Self.watch
        var last = start
        var mark = driver.events.mark
        var updates = 0
        var longest = Duration.zero
        while last < end {
            let bound = max(.zero, last + Self.longestGap - ContinuousClock.now)
            guard let update = await driver.events.first(["playback.state"], session: route.session, after: mark, within: bound) else {
                let since = updates == 0 ? "the start of the watch" : "the update before"
                return .fail("no playback.state for \(Self.longestGap) after \(since) (\(updates) update(s) in \((ContinuousClock.now - start).milliseconds) ms of a playing session)")
            }
            let gap = update.at - last
            guard gap <= Self.longestGap else {
                return .fail("\(gap.milliseconds) ms without a playback.state (after \(updates) update(s)) while the session played")
            }
            longest = max(longest, gap)
            updates += 1
            mark = update.index + 1
            last = update.at
            let state = try FromDriver.PlaybackState.decode(update.params).state
            if !state.isPlaying {
                return .pass("\(updates) update(s), then state \(state.state.rawValue) (no longer playing) after \((last - start).milliseconds) ms")
            }
        }
        return .pass("\(updates) updates in \(Self.watch), the longest silence \(longest.milliseconds) ms")
    }

    private func setPlayback(_ driver: DriverUnderTest, _ route: ActiveRoute, _ clause: String, _ changes: PlaybackChanges,
                             _ problem: @escaping (PlaybackStatus) -> String?) async {
        await report.check(section, clause) {
            let state = try await driver.call(ToDriver.SetPlayback(session: route.session, changes: changes))
            return problem(state).map { .fail("the answer says \($0)") } ?? .pass
        }
    }

    /// §11.2: `device.deactivate` is answered, and nothing more comes about the session.
    func deactivate(_ driver: DriverUnderTest, route: ActiveRoute) async {
        await report.check("§11.2 Deactivation", "device.deactivate is answered, and no message about the session follows") {
            let (_, after) = try await driver.callMarkingAnswer(ToDriver.Deactivate(device: route.device, session: route.session))
            if let late = await driver.events.first(["playback.state", "session.started", "session.failed", "device.activated", "device.deactivated"],
                                                    session: route.session, after: after, within: Self.silence) {
                return .fail("\(late.method) \(late.paramsText) after device.deactivate was answered")
            }
            return .pass
        }
    }
}
