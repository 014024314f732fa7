import CLinuxHelpers
import Foundation
import MediaRouteIPC

/// The driver process's side of the supervisor protocol: the handshake on descriptor 3, requests
/// turned into `MediaDeviceExtension` calls on the main actor, and the playback-state cadence.
@MainActor
enum DriverRuntime {
    nonisolated static let routingManager = MediaDeviceRoutingManager()
    static var driver: (any MediaDeviceExtension)?
    static var playbackControls: [String: any AVInterfaceControllable] = [:]
    static var lastSnapshots: [String: JSONObject] = [:]
    static var sampleStreams: [RealtimeSampleStream] = []
    /// How often playback state is compared and, if changed, sent; a full update goes every `fullEvery` ticks.
    static let cadence: Duration = .milliseconds(250)
    static let fullEvery = 4

    static func run<Driver: MediaDeviceExtension>(_ type: Driver.Type) async {
        // Standard output is not the channel (descriptor 3 is), but a stray print must still land
        // somewhere visible: the supervisor logs our stderr under the driver's name.
        dup2(STDERR_FILENO, STDOUT_FILENO)
        clh_line_buffer_stdout()
        let socket = ChildProcess.socketDescriptor
        var status = stat()
        guard fstat(socket, &status) == 0, status.st_mode & S_IFMT == S_IFSOCK else {
            fail("this program is a MediaRoute driver: mediarouted starts it with its socket as descriptor 3")
        }
        // Die with the supervisor, even if it was killed with SIGKILL.
        _ = clh_set_parent_death_signal(SIGTERM)
        if let expected = ProcessInfo.processInfo.environment["MEDIAROUTE_SUPERVISOR_PID"].flatMap(Int32.init), getppid() != expected {
            fail("the supervisor (pid \(expected)) is gone")
        }

        let driver = Driver()
        self.driver = driver
        let name = CommandLine.arguments.first.map { String($0.split(separator: "/").last ?? Substring($0)) } ?? "driver"
        let hello = Hello(role: .driver, name: name, identity: [
            "protocol": .string(driver.protocolType.identifier), "pid": .integer(Int64(getpid())),
            "supportsSimultaneousSessions": .bool(driver.supportsSimultaneousSessions),
            "realtimeSampleHandling": .bool(driver is any RealtimeSampleHandling),
        ])
        let connection: Connection
        do {
            connection = try await Connection.open(socket: socket, hello: hello, side: .initiator(),
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

    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("driver: \(message)\n".utf8))
        exit(70)
    }

    /// Sends the state of each session whose state changed since last sent (or all, if `force`).
    static func publishPlaybackState(force: Bool, only session: String?) {
        for (id, control) in playbackControls where session == nil || session == id {
            let snapshot = PlaybackStatus(of: control).json
            guard force || lastSnapshots[id] != snapshot else { continue }
            lastSnapshots[id] = snapshot
            routingManager.post(DriverMethod.playbackState, ["session": .string(id), "state": .object(snapshot)])
        }
    }

    // MARK: Requests from the supervisor

    nonisolated static func handlers() -> RPCHandlers {
        var handlers = RPCHandlers()
        /// Runs `body` on the main actor with the driver; errors from parameter checks become invalidParams.
        func on(_ method: String, _ body: @escaping @MainActor @Sendable (any MediaDeviceExtension, JSONObject) throws -> JSONValue) {
            handlers.onRequest(method) { request in
                let result: Result<JSONValue, any Error> = await MainActor.run {
                    guard let driver = DriverRuntime.driver else { return .failure(RPCError(.internalError, "the driver is not running")) }
                    return Result { try body(driver, request.params) }
                }
                return RPCReply(try result.get())
            }
        }
        on(DriverMethod.startDiscovery) { driver, _ in driver.startDeviceDiscovery(); return .null }
        on(DriverMethod.stopDiscovery) { driver, _ in driver.stopDeviceDiscovery(); return .null }
        on(DriverMethod.activate) { driver, params in
            let features = MediaOutputDevice.Capabilities(names: params["features"]?.arrayValue?.compactMap(\.stringValue) ?? []) ?? []
            driver.activateDevice(try params.device(), session: try params.session(), for: features)
            return .null
        }
        on(DriverMethod.pair) { driver, params in
            driver.connectUsingPairingCode(params["code"]?.stringValue, to: try params.device(), session: try params.session())
            return .null
        }
        on(DriverMethod.deactivate) { driver, params in
            let session = try params.session()
            closeStreams { $0.session == session }
            driver.deactivateDevice(try params.device(), session: session)
            forget(session.id)
            return .null
        }
        on(DriverMethod.setVolume) { driver, params in
            guard let level = params["volume"]?.doubleValue, (0...1).contains(level) else { throw RPCError.invalidParams("\"volume\" must be a number from 0 to 1") }
            driver.setVolume(Float(level), for: try params.device())
            return .null
        }
        on(DriverMethod.getVolume) { driver, params in
            let device = try params.device()
            return ["volume": driver.volume(for: device).json, "muted": .bool(driver.isDeviceMuted(device))]
        }
        on(DriverMethod.changeVolume) { driver, params in
            guard let steps = params["by"]?.integerValue, (-100...100).contains(steps) else { throw RPCError.invalidParams("\"by\" must be an integer from -100 to 100") }
            driver.changeVolume(by: Int(steps), for: try params.device())
            return .null
        }
        on(DriverMethod.mute) { driver, params in driver.muteDevice(try params.device()); return .null }
        on(DriverMethod.unmute) { driver, params in driver.unmuteDevice(try params.device()); return .null }
        on(DriverMethod.startSession) { driver, params in
            guard let text = params["url"]?.stringValue, let url = URL(string: text), url.scheme != nil else {
                throw RPCError.invalidParams("\"url\" must be an absolute URL")
            }
            driver.startSession(try params.session(), identifier: params["application"]?.stringValue, url: url)
            return .null
        }
        on(DriverMethod.stopSession) { driver, params in
            let session = try params.session()
            driver.stopSession(session)
            forget(session.id)
            return .null
        }
        on(DriverMethod.dataToDevice) { driver, params in
            guard let application = params["application"]?.stringValue else { throw RPCError.invalidParams("\"application\" must be a string") }
            guard let text = params["data"]?.stringValue, let data = Data(base64Encoded: text) else { throw RPCError.invalidParams("\"data\" must be base64") }
            driver.receiveData(data, fromApplication: application, session: try params.session())
            return .null
        }
        on(DriverMethod.setPlayback) { _, params in
            let session = try params.session()
            guard let control = playbackControls[session.id] else {
                throw MediaDeviceError(.sessionFailed, "\(session) has no playback in progress").rpcError
            }
            try PlaybackChanges.apply(params["changes"]?.objectValue ?? [:], to: control)
            let snapshot = PlaybackStatus(of: control).json
            lastSnapshots[session.id] = snapshot
            return .object(snapshot)
        }
        on(DriverMethod.ping) { _, _ in .object([:]) }
        handlers.onRequest(DriverMethod.startStream) { request in
            // The ring is mapped here, off the main actor; the driver hears of it on the main actor.
            let params = request.params
            let format = try SampleFormat(json: params["format"])
            guard let identifier = params["stream"]?.stringValue, !identifier.isEmpty else { throw RPCError.invalidParams("\"stream\" must be a non-empty string") }
            let session = try params.session()
            let ring: SampleRing
            do {
                ring = try SampleRing(descriptors: request.descriptors)
            } catch let error as SampleRingError {
                throw RPCError.invalidParams(error.message)
            }
            guard ring.format == format else { throw RPCError.invalidParams("the ring holds \(ring.format), but the message says \(format)") }
            let stream = RealtimeSampleStream(identifier: identifier, session: session, ring: ring)
            let result: Result<Void, RPCError> = await MainActor.run {
                guard let driver = DriverRuntime.driver as? any RealtimeSampleHandling else {
                    return .failure(MediaDeviceError(.unsupported, "this driver takes no real-time samples").rpcError)
                }
                sampleStreams.append(stream)
                driver.startRealtimeSampleDelivery(session: session)
                return .success(())
            }
            try result.get()
            return RPCReply()
        }
        on(DriverMethod.stopStream) { driver, params in
            guard let identifier = params["stream"]?.stringValue else { throw RPCError.invalidParams("\"stream\" must be a string") }
            closeStreams { $0.identifier == identifier }
            return .null
        }
        return handlers
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

extension JSONObject {
    func device() throws(RPCError) -> MediaOutputDevice {
        guard let value = self["device"] else { throw .invalidParams("missing \"device\"") }
        do { return try MediaOutputDevice(json: value) } catch { throw .invalidParams(error.message) }
    }

    func session() throws(RPCError) -> MediaOutputSession {
        guard let id = self["session"]?.stringValue, !id.isEmpty else { throw .invalidParams("\"session\" must be a non-empty string") }
        return MediaOutputSession(id: id)
    }
}
