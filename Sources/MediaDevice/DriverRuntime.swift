import Foundation
import MediaRouteIPC
import MediaRouteWire

/// The driver process's side of the supervisor protocol: the handshake on descriptor 3, requests
/// turned into `MediaDeviceExtension` calls on the main actor, and the playback-state cadence.
@MainActor
enum DriverRuntime {
    nonisolated static let routingManager = MediaDeviceRoutingManager()
    static var driver: (any MediaDeviceExtension)?
    static var playbackControls: [String: any AVInterfaceControllable] = [:]
    static var lastSnapshots: [String: PlaybackStatus] = [:]
    static var sampleStreams: [RealtimeSampleStream] = []
    /// How often playback state is compared and, if changed, sent; a full update goes every `fullEvery` ticks.
    static let cadence: Duration = .milliseconds(250)
    static let fullEvery = 4

    static func run<Driver: MediaDeviceExtension>(_ type: Driver.Type, on loop: EventLoop) async {
        let socket = SupervisorChannel.adopt(as: "driver")

        let driver = Driver()
        self.driver = driver
        let name = CommandLine.arguments.first.map { String($0.split(separator: "/").last ?? Substring($0)) } ?? "driver"
        let identity = DriverIdentity(name: name, protocol: driver.protocolType.identifier, pid: getpid(),
                                      supportsSimultaneousSessions: driver.supportsSimultaneousSessions,
                                      realtimeSampleHandling: driver is any RealtimeSampleHandling)
        let hello = Hello(role: .driver, name: name, identity: identity.object)
        let connection: Connection
        do {
            connection = try await Connection.open(socket: socket, hello: hello, side: .initiator(), loop: loop,
                                                   configuration: ConnectionConfiguration(label: "mediarouted"), handlers: handlers())
        } catch {
            fail("could not join the supervisor: \(error)")
        }
        routingManager.attach(connection)
        let cadenceTask = Task { @MainActor in
            var tick = 0
            while !Task.isCancelled {
                try? await Task.sleep(for: cadence)
                tick += 1
                publishPlaybackState(force: tick % fullEvery == 0, only: nil)
            }
        }
        let reason = await connection.waitUntilClosed()
        cadenceTask.cancel()
        if reason.code != .connectionClosed { FileHandle.standardError.write(Data("driver: leaving: \(reason.message)\n".utf8)) }
        exit(0)
    }

    static func fail(_ message: String) -> Never { SupervisorChannel.leave("driver", message) }

    /// Sends the state of each session whose state changed since last sent (or all, if `force`).
    static func publishPlaybackState(force: Bool, only session: String?) {
        for (id, control) in playbackControls where session == nil || session == id {
            let snapshot = PlaybackStatus(of: control)
            guard force || lastSnapshots[id] != snapshot else { continue }
            lastSnapshots[id] = snapshot
            routingManager.post(FromDriver.PlaybackState(session: id, state: snapshot))
        }
    }

    // MARK: Requests from the supervisor

    nonisolated static func handlers() -> RPCHandlers {
        var handlers = RPCHandlers()
        /// Runs `body` on the main actor with the driver, after the params decoded: as the request
        /// is read, when nothing the main actor was given waits before it.
        func on<Request: WireRequest>(_ type: Request.Type, _ body: @escaping @MainActor @Sendable (any MediaDeviceExtension, Request) throws -> Request.Result) {
            handlers.onMainActor(type) { request, _ in
                guard let driver = DriverRuntime.driver else { throw RPCError(.internalError, "the driver is not running") }
                do { return try body(driver, request) } catch let error as MediaDeviceError { throw error.rpcError }
            }
        }
        on(ToDriver.StartDiscovery.self) { driver, _ in driver.startDeviceDiscovery(); return NoResult() }
        on(ToDriver.StopDiscovery.self) { driver, _ in driver.stopDeviceDiscovery(); return NoResult() }
        on(ToDriver.Activate.self) { driver, request in
            driver.activateDevice(request.device, session: try session(request.session), for: request.features)
            return NoResult()
        }
        on(ToDriver.Pair.self) { driver, request in
            driver.connectUsingPairingCode(request.code, to: request.device, session: try session(request.session))
            return NoResult()
        }
        on(ToDriver.Deactivate.self) { driver, request in
            let session = try session(request.session)
            closeStreams { $0.session == session }
            driver.deactivateDevice(request.device, session: session)
            forget(session.id)
            return NoResult()
        }
        on(ToDriver.SetVolume.self) { driver, request in
            guard (0...1).contains(request.volume) else { throw RPCError.invalidParams("volume.set: \"volume\" must be from 0 to 1, not \(request.volume)") }
            driver.setVolume(Float(request.volume), for: request.device)
            return NoResult()
        }
        on(ToDriver.GetVolume.self) { driver, request in
            .init(volume: driver.volume(for: request.device), muted: driver.isDeviceMuted(request.device))
        }
        on(ToDriver.ChangeVolume.self) { driver, request in
            guard (-100...100).contains(request.by) else { throw RPCError.invalidParams("volume.change: \"by\" must be from -100 to 100, not \(request.by)") }
            driver.changeVolume(by: request.by, for: request.device)
            return NoResult()
        }
        on(ToDriver.Mute.self) { driver, request in driver.muteDevice(request.device); return NoResult() }
        on(ToDriver.Unmute.self) { driver, request in driver.unmuteDevice(request.device); return NoResult() }
        on(ToDriver.StartSession.self) { driver, request in
            guard let url = URL(string: request.url), url.scheme != nil else {
                throw RPCError.invalidParams("session.start: \"url\" must be an absolute URL, not \"\(request.url)\"")
            }
            driver.startSession(try session(request.session), identifier: request.application, url: url)
            return NoResult()
        }
        on(ToDriver.StopSession.self) { driver, request in
            let session = try session(request.session)
            driver.stopSession(session)
            forget(session.id)
            return NoResult()
        }
        on(ToDriver.DataToDevice.self) { driver, request in
            driver.receiveData(request.data.bytes, fromApplication: request.application, session: try session(request.session))
            return NoResult()
        }
        on(ToDriver.SetPlayback.self) { _, request in
            let session = try session(request.session)
            guard let control = playbackControls[session.id] else {
                throw MediaDeviceError(.sessionFailed, "\(session) has no playback in progress")
            }
            request.changes.apply(to: control)
            let snapshot = PlaybackStatus(of: control)
            lastSnapshots[session.id] = snapshot
            return snapshot
        }
        on(ToDriver.Ping.self) { _, _ in .init() }
        handlers.on(ToDriver.StartStream.self) { request, incoming in
            // The ring is mapped here, off the main actor; the driver hears of it on the main actor.
            let session = try session(request.session)
            guard !request.stream.isEmpty else { throw RPCError.invalidParams("stream.start: \"stream\" must be a non-empty string") }
            let ring: SampleRing
            do {
                ring = try SampleRing(descriptors: incoming.descriptors)
            } catch let error as SampleRingError {
                throw RPCError.invalidParams(error.message)
            }
            guard ring.format == request.format else { throw RPCError.invalidParams("the ring holds \(ring.format), but the message says \(request.format)") }
            let stream = RealtimeSampleStream(identifier: request.stream, session: session, ring: ring)
            let result: Result<Double?, RPCError> = await MainActor.run {
                guard let driver = DriverRuntime.driver as? any RealtimeSampleHandling else {
                    return .failure(MediaDeviceError(.unsupported, "this driver takes no real-time samples").rpcError)
                }
                sampleStreams.append(stream)
                driver.startRealtimeSampleDelivery(session: session)
                return .success(driver.outputLatency(for: stream))
            }
            return ToDriver.StartStream.Started(latency: try result.get())
        }
        on(ToDriver.StopStream.self) { _, request in
            closeStreams { $0.identifier == request.stream }
            return NoResult()
        }
        return handlers
    }

    nonisolated static func session(_ id: String) throws(RPCError) -> MediaOutputSession {
        guard !id.isEmpty else { throw .invalidParams("\"session\" must be a non-empty string") }
        return MediaOutputSession(id: id)
    }

    /// Closes the streams that match, and tells the driver of each.
    static func closeStreams(where matches: (RealtimeSampleStream) -> Bool) {
        let closing = sampleStreams.filter(matches)
        sampleStreams.removeAll(where: matches)
        for stream in closing {
            stream.close()
            (driver as? any RealtimeSampleHandling)?.stopRealtimeSampleDelivery(session: stream.session)
        }
    }

    static func forget(_ session: String) {
        playbackControls[session] = nil
        lastSnapshots[session] = nil
    }
}
