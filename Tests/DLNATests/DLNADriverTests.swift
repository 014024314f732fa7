@testable import AVSystemRouting
import Foundation
import MediaDevice
import MediaRouteIPC
@testable import MediaRouteSupervisor
import PrivateDaemons
import Testing
import TestSupport

/// The DLNA driver against real gmediarender renderers on a private LAN: found and lost, URLs and
/// files played, paused, sought and ended, volume both ways, apps' live audio, a renderer killed
/// mid-session and rebooted, and devices that fault or answer garbage.
@Suite("DLNA: renderers on a private LAN", .serialized, .timeLimit(.minutes(3)))
struct DLNADriverTests {
    /// An activated renderer and an app holding its route.
    private func route(_ bed: DLNATestBed, _ name: String, app: AVSystemRouteController? = nil) async throws -> AVSystemRoute {
        let app = app ?? bed.app()
        let observer = ActivatedRouteObserver()
        #expect(app.addObserver(observer))
        try await bed.activated(name)
        try await bed.harness.waitUntil("app has the route") { await MainActor.run { observer.route != nil } }
        return try #require(await MainActor.run { observer.route })
    }

    @Test func aRendererIsListedAndLeavesWithByebyeAndComesBack() async throws {
        try await DLNATestBed.run { bed in
            let renderer = try await bed.addRenderer("Den Speaker")
            let view = PickerView()
            let picker = await bed.supervisor.openPicker { view.update($0) }
            try await bed.harness.waitUntil("listed") { view.names() == ["Den Speaker"] }
            let entry = try #require(view.current.first)
            #expect(entry.routes.map(\.protocolID) == [DLNATestBed.protocolID])
            #expect(entry.routes.first?.device.id == "dlna:" + renderer.uuid)
            // gmediarender renders video too: a TV, as far as the picker cares.
            #expect(entry.routes.first?.device.deviceType == .tv)
            await renderer.stop()
            try await bed.harness.waitUntil("gone after its byebye") { view.names().isEmpty }
            try await renderer.restart()
            try await bed.harness.waitUntil("listed again after it returned") { view.names() == ["Den Speaker"] }
            await bed.supervisor.closePicker(picker.id)
        }
    }

    /// Unplugged: no byebye, and a max-age (gmediarender's is 100 s) far off. While a picker is
    /// open, three searches left unanswered take it off the list.
    @Test func aRendererThatVanishesWithoutAWordLeavesThePicker() async throws {
        try await DLNATestBed.run { bed in
            let renderer = try await bed.addRenderer("Attic Speaker")
            let view = PickerView()
            let picker = await bed.supervisor.openPicker { view.update($0) }
            try await bed.harness.waitUntil("listed") { view.names() == ["Attic Speaker"] }
            await renderer.kill()
            try await bed.harness.waitUntil("gone once it stopped answering searches") { view.names().isEmpty }
            try await bed.harness.waitUntil("the log says why") {
                bed.harness.log.all.contains { $0.contains("Attic Speaker no longer answers searches") }
            }
            await bed.supervisor.closePicker(picker.id)
        }
    }

    /// The controller loses its only network: the driver says why nothing can be found, keeps
    /// looking, and finds the renderer once the network is back.
    @Test func noNetworkToSearchIsSaidAndDiscoveryComesBackWithIt() async throws {
        try await DLNATestBed.run { bed in
            _ = try await bed.addRenderer("Garage Radio")
            let lan = bed.network.controllerNamespace, address = bed.network.controllerAddress + "/24"
            _ = try await ChildOutput.run("/usr/sbin/ip", ["-n", lan, "addr", "del", address, "dev", "br0"])
            let view = PickerView()
            let picker = await bed.supervisor.openPicker { view.update($0) }
            try await bed.harness.waitUntil("the driver says why") {
                bed.harness.log.all.contains { $0.contains("discovery failed: no network interface that can multicast is up") }
            }
            #expect(view.names().isEmpty)
            _ = try await ChildOutput.run("/usr/sbin/ip", ["-n", lan, "addr", "add", address, "dev", "br0"])
            try await bed.harness.waitUntil("found once the network is back") { view.names() == ["Garage Radio"] }
            await bed.supervisor.closePicker(picker.id)
        }
    }

    @Test func aURLPlaysPausesSeeksEndsAndPlaysAgain() async throws {
        try await DLNATestBed.run { bed in
            let renderer = try await bed.addRenderer("Lounge TV")
            let media = try await bed.mediaServer(seconds: 6)
            let route = try await route(bed, "Lounge TV")
            let session = AVSystemRouteSession(url: URL(string: media.url + "/tone.wav")!, mode: .player)
            #expect(route.addSession(session))
            let playing = try await session.start()
            let control = playing.playbackControl
            try await bed.harness.waitUntil("the renderer plays") { await bed.transportState(renderer) == "PLAYING" }
            try await bed.harness.waitUntil("the app sees it play") { await MainActor.run { control.state == .playing } }
            try await bed.harness.waitUntil("the position moves") { await MainActor.run { control.currentPlaybackPosition >= 1 } }
            #expect(await MainActor.run { control.timeRange?.upperBound }.map { abs($0 - 6) < 0.5 } == true)

            await MainActor.run { control.isPlaying = false }
            try await bed.harness.waitUntil("the renderer pauses") { await bed.transportState(renderer) == "PAUSED_PLAYBACK" }
            try await bed.harness.waitUntil("the app sees the pause") { await MainActor.run { control.state == .paused } }
            await MainActor.run { control.currentPlaybackPosition = 4 }
            await MainActor.run { control.isPlaying = true }
            try await bed.harness.waitUntil("playing from 4 s") {
                guard let answer = try? await bed.controlPoint(renderer, service: "AVTransport", "GetPositionInfo", [("InstanceID", "0")]),
                      let position = DLNATestBed.value("RelTime", in: answer) else { return false }
                return position >= "0:00:04"
            }
            try await bed.harness.waitUntil("the renderer stops at the end") { await bed.transportState(renderer) == "STOPPED" }
            try await bed.harness.waitUntil("the app sees the end") { await MainActor.run { control.state == .ended } }
            // gmediarender forgets the URI at the end: playing again loads it again.
            await MainActor.run { control.isPlaying = true }
            try await bed.harness.waitUntil("plays again") { await bed.transportState(renderer) == "PLAYING" }
            // The route given up: what we started there stops.
            try await bed.supervisor.deactivate("Lounge TV")
            try await bed.harness.waitUntil("stopped with the route") { await bed.transportState(renderer) == "STOPPED" }
        }
    }

    @Test func volumeAndMuteTravelBothWays() async throws {
        try await DLNATestBed.run { bed in
            let renderer = try await bed.addRenderer("Study Speaker")
            _ = try await route(bed, "Study Speaker")
            _ = try await bed.supervisor.volume("Study Speaker", .set(0.3))
            try await bed.harness.waitUntil("the renderer is at 30") {
                let answer = try? await bed.controlPoint(renderer, service: "RenderingControl", "GetVolume", [("InstanceID", "0"), ("Channel", "Master")])
                return answer.flatMap { DLNATestBed.value("CurrentVolume", in: $0) } == "30"
            }
            // Another control point (the TV's remote, a phone) turns it up: the system hears it.
            _ = try await bed.controlPoint(renderer, service: "RenderingControl", "SetVolume", [("InstanceID", "0"), ("Channel", "Master"), ("DesiredVolume", "70")])
            try await bed.harness.waitUntil("the system hears 0.7") { await bed.supervisor.activeRoutes().first?.volume == 0.7 }
            _ = try await bed.supervisor.volume("Study Speaker", .mute)
            try await bed.harness.waitUntil("the renderer is muted") {
                let answer = try? await bed.controlPoint(renderer, service: "RenderingControl", "GetMute", [("InstanceID", "0"), ("Channel", "Master")])
                return answer.flatMap { DLNATestBed.value("CurrentMute", in: $0) } == "1"
            }
        }
    }

    @Test func aLocalFileIsServedToTheRendererAndSeeks() async throws {
        try await DLNATestBed.run { bed in
            let renderer = try await bed.addRenderer("Kitchen Radio")
            let file = bed.harness.root + "/local tone.wav"
            try await MediaFileServer.makeTone(at: file, seconds: 8, title: "Local Tone")
            let route = try await route(bed, "Kitchen Radio")
            let session = AVSystemRouteSession(url: URL(fileURLWithPath: file), mode: .player)
            #expect(route.addSession(session))
            let control = try await session.start().playbackControl
            try await bed.harness.waitUntil("the renderer plays our file") { await bed.transportState(renderer) == "PLAYING" }
            let media = try await bed.controlPoint(renderer, service: "AVTransport", "GetMediaInfo", [("InstanceID", "0")])
            let uri = try #require(DLNATestBed.value("CurrentURI", in: media))
            #expect(uri.hasPrefix("http://\(bed.network.controllerAddress):"), "\(uri)")
            #expect(uri.contains("/media/"))
            // Served to the renderer only: the controller itself is refused.
            let fromElsewhere = try await bed.network.run(["/usr/bin/curl", "-sS", "--max-time", "3", "-o", "/dev/null", "-w", "%{http_code}", uri],
                                                          in: bed.network.controllerNamespace)
            #expect(fromElsewhere.standardOutput == "403", "\(fromElsewhere.standardError)")
            await MainActor.run { control.currentPlaybackPosition = 5 }
            try await bed.harness.waitUntil("the renderer sought to 5 s in our file") {
                guard let answer = try? await bed.controlPoint(renderer, service: "AVTransport", "GetPositionInfo", [("InstanceID", "0")]),
                      let position = DLNATestBed.value("RelTime", in: answer) else { return false }
                return position >= "0:00:05"
            }
        }
    }

    @Test func anAppsLiveAudioIsFetchedAndPlayedByTheRenderer() async throws {
        try await DLNATestBed.run { bed in
            let renderer = try await bed.addRenderer("Patio Speaker")
            let route = try await route(bed, "Patio Speaker")
            let stream = try await route.startAudioStream()
            let writer = Task {
                let frame = 960
                var chunk = 0
                let start = ContinuousClock.now
                while !Task.isCancelled {
                    var samples = [Float](repeating: 0, count: frame * 2)
                    for i in 0..<frame {
                        let value = Float(0.4 * sin(2 * Double.pi * 440 * Double(chunk * frame + i) / 48_000))
                        samples[2 * i] = value
                        samples[2 * i + 1] = value
                    }
                    _ = try? samples.withUnsafeBufferPointer { try stream.write($0) }
                    chunk += 1
                    try? await Task.sleep(until: start + .milliseconds(20 * chunk))
                }
            }
            defer { writer.cancel() }
            try await bed.harness.waitUntil("the renderer plays the live stream") { await bed.transportState(renderer) == "PLAYING" }
            let media = try await bed.controlPoint(renderer, service: "AVTransport", "GetMediaInfo", [("InstanceID", "0")])
            #expect(DLNATestBed.value("CurrentURI", in: media)?.contains("/media/") == true)
            try await bed.harness.waitUntil("the renderer's position moves through the stream") {
                guard let answer = try? await bed.controlPoint(renderer, service: "AVTransport", "GetPositionInfo", [("InstanceID", "0")]),
                      let position = DLNATestBed.value("RelTime", in: answer) else { return false }
                return position >= "0:00:01"
            }
            // How late the renderer plays what the app writes is measured and told to the operator.
            try await bed.harness.waitUntil("the renderer's latency is reported") {
                bed.harness.log.all.contains { $0.contains("Patio Speaker plays live audio") && $0.contains(" ms after it is written") }
            }
            writer.cancel()
            try await stream.stop()
        }
    }

    @Test func aRendererKilledMidSessionEndsTheRouteAndIsBackAfterItsReboot() async throws {
        try await DLNATestBed.run { bed in
            let renderer = try await bed.addRenderer("Bedroom TV")
            let media = try await bed.mediaServer(seconds: 30)
            let app = bed.app()
            let changes = app.routeChanges()
            let seen = EventLog<AVSystemRouteChange>()
            Task { for await change in changes { seen.append(change) } }
            let route = try await route(bed, "Bedroom TV", app: app)
            let session = AVSystemRouteSession(url: URL(string: media.url + "/tone.wav")!, mode: .player)
            #expect(route.addSession(session))
            _ = try await session.start()
            try await bed.harness.waitUntil("the renderer plays") { await bed.transportState(renderer) == "PLAYING" }

            await renderer.kill()
            try await bed.harness.waitUntil("the route ends") { await bed.supervisor.activeRoutes().isEmpty }
            try await bed.harness.waitUntil("the app hears why") { seen.all.contains { $0.reason == .oldDeviceUnavailable } }
            let message = seen.all.first { $0.reason == .oldDeviceUnavailable }?.message ?? ""
            #expect(message.contains("Bedroom TV stopped answering"), "\(message)")

            try await renderer.restart()
            try await bed.activated("Bedroom TV")
            #expect(await bed.supervisor.activeRoutes().count == 1)
        }
    }

    /// A renderer switched off at the wall while nothing plays (no goodbye, its announcement good
    /// for 100 s more) ends its route once two of the driver's idle checks go unanswered.
    @Test func anIdleRendererThatDiesEndsItsRouteLongBeforeItsAnnouncementRunsOut() async throws {
        try await DLNATestBed.run(environment: ["MEDIAROUTE_DLNA_IDLE_CHECK_SECONDS": "1"]) { bed in
            let renderer = try await bed.addRenderer("Attic TV")
            try await bed.activated("Attic TV")
            let ended = EventLog<String>()
            _ = await bed.supervisor.subscribe { event in
                if case .deactivated(_, _, let message) = event { ended.append(message) }
            }
            await renderer.kill()
            try await bed.harness.waitUntil("the route ends") { !ended.all.isEmpty }
            #expect(ended.all.first?.contains("Attic TV stopped answering") == true, "\(ended.all)")
        }
    }

    @Test func faultsGarbageAndUnplayableMediaAreSentencesNotSurprises() async throws {
        try await DLNATestBed.run { bed in
            let garbage = try HostileRenderer.start(on: try await bed.network.addHost(), network: bed.network, mode: "garbage-description",
                                                    name: "Broken Box", directory: bed.harness.root)
            let faulting = try HostileRenderer.start(on: try await bed.network.addHost(), network: bed.network, mode: "faulting",
                                                     name: "Fussy TV", directory: bed.harness.root)
            let babbling = try HostileRenderer.start(on: try await bed.network.addHost(), network: bed.network, mode: "garbage-soap",
                                                     name: "Babbling TV", directory: bed.harness.root)
            defer { Task { await garbage.stop(); await faulting.stop(); await babbling.stop() } }
            let media = try await bed.mediaServer()

            try await bed.listed("Fussy TV")
            try await bed.harness.waitUntil("the broken description is logged with its reason") {
                bed.harness.log.all.contains { $0.contains("ignoring the device at http://") && $0.contains("not well-formed XML") }
            }
            #expect(!(await bed.supervisor.pickerEntries().map(\.name)).contains("Broken Box"))

            // A renderer that answers garbage cannot be activated, and says why.
            try await bed.listed("Babbling TV")
            await #expect(throws: MediaDeviceError.self) { try await bed.supervisor.activate("Babbling TV") { _ in nil } }

            // A renderer that refuses events is polled (and the log says so); its SOAP fault reaches the app.
            let route = try await route(bed, "Fussy TV")
            try await bed.harness.waitUntil("polling is logged") { bed.harness.log.all.contains { $0.contains("Fussy TV: events unavailable") } }
            let session = AVSystemRouteSession(url: URL(string: media.url + "/tone.wav")!, mode: .player)
            #expect(route.addSession(session))
            let refused = await #expect(throws: (any Error).self) { _ = try await session.start() }
            #expect("\(refused.map { "\($0)" } ?? "")".contains("UPnP error 714"), "\(refused.map { "\($0)" } ?? "")")

            // A type the renderer does not take is refused before it is sent, naming what it takes.
            try "plain words".write(toFile: media.directory + "/notes.txt", atomically: true, encoding: .utf8)
            let text = AVSystemRouteSession(url: URL(string: media.url + "/notes.txt")!, mode: .player)
            #expect(route.addSession(text))
            let unplayable = await #expect(throws: (any Error).self) { _ = try await text.start() }
            #expect("\(unplayable.map { "\($0)" } ?? "")".contains("cannot play text/plain"), "\(unplayable.map { "\($0)" } ?? "")")

            // A URL that is not there is refused with what its server said (asked while the renderer
            // is told, when the name gives a type it takes; the renderer is stopped again).
            let missing = AVSystemRouteSession(url: URL(string: media.url + "/missing.wav")!, mode: .player)
            #expect(route.addSession(missing))
            let absent = await #expect(throws: (any Error).self) { _ = try await missing.start() }
            #expect("\(absent.map { "\($0)" } ?? "")".contains("missing.wav answered HTTP 404"), "\(absent.map { "\($0)" } ?? "")")
        }
    }
}
