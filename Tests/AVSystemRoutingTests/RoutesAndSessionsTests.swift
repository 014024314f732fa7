@testable import AVSystemRouting
import Foundation
import MediaRouteIPC
import MediaDevice
@testable import MediaRouteSupervisor
import PrivateDaemons
import Testing
import TestSupport

@Suite("AVSystemRouting: observers, routes, sessions and playback control", .timeLimit(.minutes(2)))
struct RoutesAndSessionsTests {
    @Test func addObserverIsFalseWithoutADaemonAndForAnObserverAlreadyRegistered() async throws {
        let nowhere = AVSystemRouteController(configuration: .init(applicationIdentifier: "org.test.app", supportedProtocols: ["org.test.alpha"],
                                                                   socketPath: NSTemporaryDirectory() + "no-such-daemon.sock"))
        let recorder = AppRecorder()
        #expect(nowhere.addObserver(recorder) == false)

        try await AppTestBed.run(driver: "org.test.alpha", devices: ["Den TV"]) { bed in
            let controller = bed.controller(protocols: ["org.test.alpha"])
            #expect(controller.addObserver(recorder))
            #expect(controller.addObserver(recorder) == false)
            controller.removeObserver(recorder)
            #expect(controller.addObserver(recorder))
        }
    }

    @Test func activationAndDeactivationReachObserversWithTheRoute() async throws {
        try await AppTestBed.run(driver: "org.test.alpha", devices: ["Den TV"]) { bed in
            let controller = bed.controller(protocols: ["org.test.alpha"])
            let recorder = AppRecorder()
            #expect(controller.addObserver(recorder))
            await recorder.watchChanges(of: controller)
            try await bed.discover(["Den TV"])
            let id = try await bed.activate("Den TV")

            try await bed.eventually("activate delivered") { recorder.events.count == 1 }
            let route = try #require(await recorder.activeRoute)
            #expect(route.identifier == id)
            #expect(route.protocolType == UTType(exportedAs: "org.test.alpha"))
            #expect(route.protocolName == "Test alpha")
            #expect(route.routeDisplayName == "Den TV")
            #expect(route.routeSymbolName == "video-display")
            #expect(route.isActive)
            #expect(controller.currentRoute.outputs.map(\.portType) == [.tv])

            try await bed.supervisor.deactivate("Den TV")
            try await bed.eventually("deactivate delivered") { recorder.events.count == 2 }
            #expect(await recorder.events.map(\.0) == [.activate, .deactivate])
            #expect(!route.isActive)
            #expect(controller.activeRoutes.isEmpty)
            try await bed.eventually("two route changes") { recorder.changes.count == 2 }
            let changes = await recorder.changes
            #expect(changes.map(\.reason) == [.newDeviceAvailable, .override])
            #expect(changes[1].previousRoute.outputs.map(\.portName) == ["Den TV"])
            #expect(changes[1].currentRoute.outputs.isEmpty)
            // A session cannot be added to a route that ended.
            #expect(route.addSession(AVSystemRouteSession(url: URL(string: "http://127.0.0.1:9/a.mp4")!, mode: .player)) == false)
        }
    }

    @Test func aRouteActiveBeforeTheAppConnectedIsReportedToo() async throws {
        try await AppTestBed.run(driver: "org.test.alpha", devices: ["Den TV"]) { bed in
            try await bed.discover(["Den TV"])
            try await bed.activate("Den TV")
            let controller = bed.controller(protocols: ["org.test.alpha"])
            let recorder = AppRecorder()
            #expect(controller.addObserver(recorder))
            try await bed.eventually("existing route reported") { recorder.activeRoute?.routeDisplayName == "Den TV" }
        }
    }

    @Test func anAppSeesOnlyRoutesOfTheProtocolsItDeclared() async throws {
        try await AppTestBed.run { bed in
            try bed.harness.addDriver("org.test.alpha", devices: ["Den TV"])
            try bed.harness.addDriver("org.test.beta", devices: ["Hall Speaker"])
            try await bed.start()
            let alphaApp = bed.controller("org.test.alpha-app", protocols: ["org.test.alpha"])
            let betaApp = bed.controller("org.test.beta-app", protocols: ["org.test.beta"])
            let alpha = AppRecorder(), beta = AppRecorder()
            #expect(alphaApp.addObserver(alpha) && betaApp.addObserver(beta))
            try await bed.discover(["Den TV", "Hall Speaker"])
            let denRoute = try await bed.activate("Den TV")
            try await bed.eventually("alpha app told") { alpha.events.count == 1 }
            try await bed.activate("Hall Speaker")
            try await bed.eventually("beta app told") { beta.events.count == 1 }
            // Each heard of its own protocol's route only.
            #expect(await alpha.events.map { $0.1.routeDisplayName } == ["Den TV"])
            #expect(await beta.events.map { $0.1.routeDisplayName } == ["Hall Speaker"])
            #expect(betaApp.activeRoutes.map(\.routeDisplayName) == ["Hall Speaker"])

            // Naming the other protocol's route by its id does not help.
            let intruder = AVSystemRouteControllerProbe(betaApp)
            let error = await #expect(throws: MediaDeviceError.self) { try await intruder.startSession(route: denRoute, url: "http://127.0.0.1:9/film.mp4") }
            #expect(error?.message == "org.test.beta-app did not declare org.test.alpha among its supported protocols, so it cannot use that route")
        }
    }

    @Test func playerModeSessionMirrorsPlaybackBothWays() async throws {
        try await AppTestBed.run(driver: "org.test.alpha", devices: ["Den TV"]) { bed in
            let (_, _, route) = try await bed.appWithActiveRoute()

            let session = AVSystemRouteSession(url: URL(string: "http://127.0.0.1:9/film.mp4")!, mode: .player)
            #expect(route.addSession(session))
            #expect(route.addSession(session) == false)  // already added
            let media = try await session.start()
            #expect(media.dataChannel == nil)
            #expect(media.application == nil)
            await #expect(throws: AVSystemRoutingError.self) { _ = try await session.start() }
            let control = media.playbackControl
            #expect(await control.state == .playing)
            #expect(await control.metadata.title == "Test Pattern")
            #expect(await control.audioOptions == ["English", "Français"])

            // The driver's own updates arrive (its position advances while it plays).
            let updates = await control.updates()
            let advanced = try await withThrowingTaskGroup(of: Bool.self) { group in
                group.addTask {
                    for await status in updates where status.position >= 0.3 { return true }
                    return false
                }
                group.addTask { try await Task.sleep(for: .seconds(20)); return false }  // bounded, not by the suite's limit
                defer { group.cancelAll() }
                return try await group.next() ?? false
            }
            #expect(advanced)

            // The app's commands reach the driver's setters, and the driver's answer comes back.
            await MainActor.run {
                control.isPlaying = false
                control.currentPlaybackPosition = 42
                control.playbackSpeed = 2
                control.volume = 0.25
                control.selectedAudioOption = "Français"
            }
            try await control.synchronize()
            let status = await control.status
            #expect(status.state == .paused && !status.isPlaying)
            #expect(status.position == 42)
            #expect(status.speed == 2 && status.volume == 0.25)
            #expect(status.selectedAudioOption == "Français")
            // The supervisor's view agrees: the setters reached the driver.
            let seen = try #require(await bed.supervisor.activeRoutes().first?.playback?.status)
            #expect(seen.state == .paused && !seen.isPlaying && seen.position == 42)
            #expect(seen.speed == 2 && seen.volume == 0.25 && seen.selectedAudioOption == "Français", "\(seen)")

            // A command the driver refuses is reported, not swallowed.
            await MainActor.run { control.currentPlaybackPosition = -5 }
            await #expect(throws: (any Error).self) { try await control.synchronize() }
            #expect(await control.lastError != nil)

            try await session.stop()
            #expect(media.hasEnded)
            route.removeSession(session)
            #expect(await bed.supervisor.activeRoutes().first?.playback == nil)
            await MainActor.run { control.isPlaying = true }
            await #expect(throws: AVSystemRoutingError.self) { try await control.synchronize() }
        }
    }

    @Test func streamingToARouteWithoutTheCapabilityIsAClearError() async throws {
        try await AppTestBed.run(driver: "org.test.alpha", devices: ["Den TV"]) { bed in
            let (controller, _, route) = try await bed.appWithActiveRoute()
            let audio = await #expect(throws: MediaDeviceError.self) { _ = try await route.startAudioStream() }
            #expect(audio?.message == "Den TV cannot take real-time audio (its capabilities: urlPlayback)")
            // The supervisor says the same to a client that skips the library's check.
            let raw = await #expect(throws: MediaDeviceError.self) {
                _ = try await controller.daemon.callReceivingDescriptors(Streams.Start(route: route.identifier, format: .video(width: 64, height: 64, frameRate: 30)))
            }
            #expect(raw?.message == "Den TV cannot take real-time video (its capabilities: urlPlayback)")
        }
    }

    @Test func applicationModeLaunchesTheAppsCounterpartWithADataChannel() async throws {
        try await AppTestBed.run(driver: "org.test.alpha", devices: ["Den TV"]) { bed in
            let (_, _, route) = try await bed.appWithActiveRoute("org.test.notes")
            let session = AVSystemRouteSession(url: URL(string: "http://127.0.0.1:9/film.mp4")!, mode: .application)
            #expect(route.addSession(session))
            let media = try await session.start()
            #expect(media.application == "org.test.notes")
            #expect(media.dataChannel != nil)
            try await session.stop()
        }
    }

    @Test func aSecondSessionNeedsADriverThatRunsSimultaneousSessions() async throws {
        try await AppTestBed.run { bed in
            try bed.harness.addDriver("org.test.single", devices: ["Den TV"])
            try bed.harness.addDriver("org.test.multi", devices: ["Hall TV"], flags: ["--simultaneous"])
            try await bed.start()
            let controller = bed.controller(protocols: ["org.test.single", "org.test.multi"])
            let recorder = AppRecorder()
            #expect(controller.addObserver(recorder))
            try await bed.discover(["Den TV", "Hall TV"])
            try await bed.activate("Den TV")
            try await bed.activate("Hall TV")
            try await bed.eventually("two routes") { recorder.events.count == 2 }
            let single = try #require(controller.activeRoutes.first { $0.routeDisplayName == "Den TV" })
            let multi = try #require(controller.activeRoutes.first { $0.routeDisplayName == "Hall TV" })
            #expect(!single.supportsSimultaneousSessions && multi.supportsSimultaneousSessions)

            let first = AVSystemRouteSession(url: URL(string: "http://127.0.0.1:9/one.mp4")!, mode: .player)
            #expect(single.addSession(first))
            _ = try await first.start()
            #expect(single.addSession(AVSystemRouteSession(url: URL(string: "http://127.0.0.1:9/two.mp4")!, mode: .player)) == false)

            let a = AVSystemRouteSession(url: URL(string: "http://127.0.0.1:9/a.mp4")!, mode: .player)
            let b = AVSystemRouteSession(url: URL(string: "http://127.0.0.1:9/b.mp4")!, mode: .player)
            #expect(multi.addSession(a))
            let mediaA = try await a.start()
            #expect(multi.addSession(b))
            let mediaB = try await b.start()
            #expect(mediaA.identifier != mediaB.identifier)
            #expect(await bed.supervisor.activeRoutes().count == 3, "the second session has an activation of its own beside the route")
            #expect(await MainActor.run { mediaA.playbackControl.state == .playing && mediaB.playbackControl.state == .playing })
            // Each session is controlled on its own.
            await MainActor.run { mediaB.playbackControl.isPlaying = false }
            try await mediaB.playbackControl.synchronize()
            #expect(await MainActor.run { mediaA.playbackControl.state == .playing && mediaB.playbackControl.state == .paused })
            // Stopping the second releases its own activation, and the first plays on.
            try await b.stop()
            try await waitUntil("child route released") { await bed.supervisor.activeRoutes().count == 2 }
            #expect(await mediaA.playbackControl.state == .playing)
        }
    }
}

extension RoutesAndSessionsTests {
    /// Sessions an app starts are on the desktop too (MPRIS, on a private session bus read with
    /// the real playerctl), a second one beside the first included; pausing one there pauses that
    /// one at the device and the app hears it.
    @Test func anAppsSessionsAreOnTheDesktopAndItsButtonsReachThem() async throws {
        let bus = try PrivateBus(kind: .session)
        defer { bus.stop() }
        try await AppTestBed.run { bed in
            try bed.harness.addDriver("org.test.multi", devices: ["Hall TV"], flags: ["--simultaneous"])
            try await bed.start(mprisBusAddress: bus.address)
            let controller = bed.controller(protocols: ["org.test.multi"])
            #expect(controller.addObserver(AppRecorder()))
            try await bed.discover(["Hall TV"])
            try await bed.activate("Hall TV")
            try await bed.eventually("the route") { !controller.activeRoutes.isEmpty }
            let route = try #require(controller.activeRoutes.first)
            let a = AVSystemRouteSession(url: URL(string: "http://127.0.0.1:9/a.mp4")!, mode: .player)
            #expect(route.addSession(a))
            let mediaA = try await a.start()
            let b = AVSystemRouteSession(url: URL(string: "http://127.0.0.1:9/b.mp4")!, mode: .player)
            #expect(route.addSession(b))
            let mediaB = try await b.start()
            func playerctl(_ arguments: [String]) async -> String {
                let run = try? await CapturedCommand.run("/usr/bin/playerctl", arguments, environment: ["DBUS_SESSION_BUS_ADDRESS": bus.address], timeout: .seconds(15))
                return run?.output.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            }
            try await bed.harness.waitUntil("two players") { await playerctl(["-l"]).split(separator: "\n").count == 2 }
            let players = await playerctl(["-l"]).split(separator: "\n").map(String.init)
            let second = try #require(await players.asyncFirst { await playerctl(["-p", $0, "metadata", "xesam:url"]) == "http://127.0.0.1:9/b.mp4" })
            _ = await playerctl(["-p", second, "pause"])
            try await mediaB.playbackControl.synchronize()
            try await bed.eventually("the app hears its second session paused") { mediaB.playbackControl.state == .paused }
            #expect(await MainActor.run { mediaA.playbackControl.state == .playing })
            try await b.stop()
            try await bed.harness.waitUntil("one player") { await playerctl(["-l"]).split(separator: "\n").count == 1 }
        }
    }
}

private extension Array {
    func asyncFirst(where matches: (Element) async -> Bool) async -> Element? {
        for element in self where await matches(element) { return element }
        return nil
    }
}

/// Raw access to the daemon with an app's identity, for what the public API would never send.
struct AVSystemRouteControllerProbe {
    let controller: AVSystemRouteController
    init(_ controller: AVSystemRouteController) { self.controller = controller }

    func startSession(route: String, url: String) async throws {
        try await controller.daemon.call(App.StartSession(route: route, url: url, mode: .player, application: nil))
    }
}
