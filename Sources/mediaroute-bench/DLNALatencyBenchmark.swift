import Foundation
import Logging
import MediaRouteIPC
import MediaRouteSupervisor
import MediaRouteWire
import PrivateDaemons

/// `dlna-latency`: on a private LAN with a real gmediarender, (1) a picker opening until a
/// renderer nobody knew of is listed, against a raw control point doing what listing needs (the
/// M-SEARCH answered, the description fetched, GetProtocolInfo) from the same namespace; and
/// (2) `play` until the renderer is in PLAYING as the system sees it, against raw
/// SetAVTransportURI + Play and GetTransportInfo polled until PLAYING. Both in the same run,
/// taking turns; the RESULT is the larger of the two median ratios.
struct DLNALatencyBenchmark {
    let iterations: Int
    static let name = "Bench Renderer"
    /// A pause between PLAYING and the Stop that follows (ours or the raw one), outside what is
    /// timed: a Stop a few milliseconds after Play, while GStreamer's souphttpsrc still fetched
    /// the media, now and then crashed gmediarender in libsoup 3 (a NULL read, in the kernel's
    /// log), and a person does not press stop within milliseconds of play.
    static let settle: UInt32 = 50_000

    func run() async throws {
        let root = NSTemporaryDirectory() + "mediaroute-bench-dlna-\(getpid())"
        try FileManager.default.createDirectory(atPath: root + "/drivers", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: root + "/media", withIntermediateDirectories: true)
        let network = try await PrivateNetwork.create()
        var renderer: PrivateRenderer?
        var mediaServer: ChildProcess?
        var supervisor: Supervisor?
        defer { try? FileManager.default.removeItem(atPath: root) }
        try await withTearDown {
            let host = try await network.addHost()
            try await MediaFileServer.makeTone(at: root + "/media/tone.wav", seconds: 30, title: "Bench Tone")
            let port = 8000 + Int(getpid() % 1000)
            let quiet = open("/dev/null", O_WRONLY | O_CLOEXEC)
            defer { close(quiet) }
            mediaServer = try ChildProcess(executable: network.controllerCommandPrefix[0],
                                           arguments: Array(network.controllerCommandPrefix.dropFirst()) + ["/usr/bin/python3", "-m", "http.server", String(port),
                                                                                                         "--bind", network.controllerAddress, "--directory", root + "/media"],
                                           standardOutput: quiet, standardError: quiet)
            let media = "http://\(network.controllerAddress):\(port)/tone.wav"
            let command = network.controllerCommandPrefix + [Executables.sibling("mediaroute-dlna-driver")]
            let manifest: JSONValue = [
                "protocol": "org.mediaroute.dlna",
                "exportedType": ["identifier": "org.mediaroute.dlna", "conformsTo": ["public.media-sharing-protocol"], "description": "UPnP/DLNA"],
                "executable": .string(command[0]), "arguments": .array(command.dropFirst().map { .string($0) }),
            ]
            try Data(JSONWriter.encode(manifest)).write(to: URL(fileURLWithPath: root + "/drivers/dlna.json"))
            var logger = Logger(label: "bench")
            logger.logLevel = .critical
            let running = Supervisor(configuration: SupervisorConfiguration(driversDirectories: [root + "/drivers"], stateDirectory: root + "/state"), logger: logger)
            try await running.start()
            supervisor = running
            // Warm: the driver started and SSDP listening, as on a machine where it ran before.
            renderer = try await PrivateRenderer.start(on: host, name: Self.name)
            _ = try await listed(running, uuid: renderer?.uuid)

            print("dlna-latency: \(iterations) runs each, gmediarender on a private LAN (veth), the raw control point in the driver's namespace")
            var rawListing: [UInt64] = [], rawSearch: [UInt64] = [], ours: [UInt64] = []
            for run in 0..<iterations {
                // A renderer nobody has heard of: a new UUID each run, the last one gone with its byebye.
                await renderer?.stop()
                let uuid = UUID().uuidString.lowercased()
                renderer = try await PrivateRenderer.start(on: host, name: Self.name, uuid: uuid)
                let measureRaw = {
                    let (search, total) = try await NamespaceThread.run(in: network.controllerNamespace) { [local = network.controllerAddress] in
                        let start = now()
                        let location = try RawControlPoint.search(from: local)
                        let searched = now()
                        let description = try RawControlPoint.http("GET", location)
                        guard description.status == 200, let control = description.body.range(of: "/upnp/control/renderconnmgr1") else {
                            throw BenchmarkError("the description has no ConnectionManager control URL")
                        }
                        let base = location.replacingOccurrences(of: "/description.xml", with: "")
                        try RawControlPoint.soap(base + description.body[control].description, service: "ConnectionManager", "GetProtocolInfo", "")
                        return (searched - start, now() - start)
                    }
                    rawSearch.append(search)
                    rawListing.append(total)
                }
                if run % 2 == 0 { try await measureRaw() }
                ours.append(try await listed(running, uuid: uuid))
                if run % 2 == 1 { try await measureRaw() }
            }
            let listing = (ours: LatencySamples(ours), raw: LatencySamples(rawListing))
            print(LatencySamples(rawSearch).millisecondsLine("  raw M-SEARCH answered"))
            print(listing.raw.millisecondsLine("  raw control point: answered, description and GetProtocolInfo"))
            print(listing.ours.millisecondsLine("  picker open to the renderer listed (warm driver, renderer new to it)"))

            guard let current = renderer else { throw BenchmarkError("no renderer") }
            let route = try await running.activate(Self.name) { _ in nil }
            let control = "http://\(current.host.address):\(current.port)/upnp/control/rendertransport1"
            var rawPlay: [UInt64] = [], ourPlay: [UInt64] = []
            for run in 0..<iterations {
                let measureRaw = {
                    rawPlay.append(try await NamespaceThread.run(in: network.controllerNamespace) {
                        let start = now()
                        try RawControlPoint.soap(control, service: "AVTransport", "SetAVTransportURI",
                                                 "<InstanceID>0</InstanceID><CurrentURI>\(media)</CurrentURI><CurrentURIMetaData></CurrentURIMetaData>")
                        try RawControlPoint.soap(control, service: "AVTransport", "Play", "<InstanceID>0</InstanceID><Speed>1</Speed>")
                        while !(try RawControlPoint.soap(control, service: "AVTransport", "GetTransportInfo", "<InstanceID>0</InstanceID>")).contains(">PLAYING<") {
                            guard now() - start < 10_000_000_000 else { throw BenchmarkError("the renderer did not say PLAYING within 10 s of the raw Play") }
                        }
                        let elapsed = now() - start
                        usleep(Self.settle)
                        try RawControlPoint.soap(control, service: "AVTransport", "Stop", "<InstanceID>0</InstanceID>")
                        try RawControlPoint.waitUntilStopped(control)
                        return elapsed
                    })
                }
                if run % 2 == 0 { try await measureRaw() }
                ourPlay.append(try await untilPlaying(running, session: route.session, url: media))
                try await Task.sleep(for: .microseconds(Self.settle))
                try await running.stopSession(Self.name)
                // Each start finds the renderer idle: a Stop still being carried out would slow
                // the next Play, ours or the raw one.
                try await NamespaceThread.run(in: network.controllerNamespace) { try RawControlPoint.waitUntilStopped(control) }
                if run % 2 == 1 { try await measureRaw() }
            }
            let play = (ours: LatencySamples(ourPlay), raw: LatencySamples(rawPlay))
            print(play.raw.millisecondsLine("  raw SetAVTransportURI + Play until GetTransportInfo says PLAYING"))
            print(play.ours.millisecondsLine("  play until the system sees PLAYING (events)"))
            let ratios = (listing: listing.ours.median / listing.raw.median, play: play.ours.median / play.raw.median)
            print("  ratios: listing \(format(ratios.listing)), play \(format(ratios.play))")
            printResult("dlna-latency", ratio: max(ratios.listing, ratios.play), target: 1.5)
        } tearDown: {
            await supervisor?.shutdown()
            await renderer?.stop()
            if let mediaServer {
                mediaServer.signal(SIGTERM)
                _ = await mediaServer.exitStatus()
            }
            await network.destroy()
        }
    }

    /// Plays `url` on the active renderer until the system sees it PLAYING: the clock starts as
    /// the supervisor takes the request and stops in its callback as it publishes that state
    /// (with the started route, or in a playback update after it), as the raw one runs from its
    /// first request until GetTransportInfo's answer is read.
    private func untilPlaying(_ supervisor: Supervisor, session: String, url: String) async throws -> UInt64 {
        let (playing, continuation) = AsyncStream.makeStream(of: UInt64.self, bufferingPolicy: .bufferingOldest(1))
        let watch = await supervisor.watchPlayback { id, state in
            if id == session, state.status.state == .playing { continuation.yield(now()) }
        }
        let timeout = Task {
            try await Task.sleep(for: .seconds(10))
            continuation.finish()
        }
        defer { timeout.cancel() }
        let start: UInt64
        do {
            start = try await supervisor.timed { try await $0.startSession(Self.name, url: url) }.start
        } catch {
            await supervisor.unwatchPlayback(watch)
            throw error
        }
        var iterator = playing.makeAsyncIterator()
        let end = await iterator.next()
        await supervisor.unwatchPlayback(watch)
        guard let end else { throw BenchmarkError("the renderer did not report PLAYING within 10 s") }
        return end - start
    }

    /// Opens a picker until the renderer of `uuid` is listed; returns how long that took.
    private func listed(_ supervisor: Supervisor, uuid: String?) async throws -> UInt64 {
        let id = "dlna:" + (uuid ?? "")
        return try await timeUntilListed(supervisor, "the renderer") { entries in entries.contains { $0.routes.contains { $0.device.id == id } } }
    }
}
