import MediaDevice
import MediaRouteIPC

/// Real-time sample streams: the supervisor makes each stream's ring and hands one end to the app
/// (the producer) and the other to the driver (the consumer), then lets go of it. It writes the
/// ring's header and never reads or copies the samples.
extension Supervisor {
    /// Opens a stream of `format` to the device of `route` (for an app its main route's id; for the
    /// operator also a device name). Returns the stream's id, its description and the ring.
    func startStream(on route: String, format: SampleFormat, owner: ClientID, by requester: Requester) async throws -> (opened: Streams.Start.Opened, ring: SampleRing) {
        let route = try routes.route(route, for: requester)
        try route.requireDevice()
        let needed: MediaOutputDevice.Capabilities = format.isAudio ? .realtimeAudioStreaming : .realtimeVideoStreaming
        guard route.device.capabilities.contains(needed) else {
            throw MediaDeviceError(.unsupported, "\(route.device.displayName) cannot take real-time \(format.isAudio ? "audio" : "video") (its capabilities: \(route.device.capabilities.names.joined(separator: ", ")))")
        }
        let process = try await ensureRunning(route.record)
        guard process.takesSamples else {
            throw MediaDeviceError(.unsupported, "driver \(route.record.id) takes no real-time samples (it does not conform to RealtimeSampleHandling)")
        }
        let ring: SampleRing
        do {
            ring = try SampleRing.create(format: format, capacity: Self.ringCapacity(for: format))
        } catch {
            throw MediaDeviceError(.sessionFailed, "cannot make a sample ring: \(error.message)")
        }
        let stream = routes.makeStreamID()
        // Recorded before the driver hears of it: whatever ends it from now on (the route, the
        // opener disconnecting) tells the driver too.
        route.streams[stream] = (format, owner)
        let started: ToDriver.StartStream.Started
        do {
            started = try await call(route.record, ToDriver.StartStream(session: route.session.id, stream: stream, format: format),
                                     descriptors: [ring.memoryFD, ring.wakeupFD])
        } catch {
            // The driver may have opened it before the failure reached here (a timeout, a cancelled request).
            if route.streams.removeValue(forKey: stream) != nil { closeAtDriver(stream, on: route) }
            throw error
        }
        guard routes.isCurrent(route), route.streams[stream] != nil else {
            throw MediaDeviceError(.connectionFailed, "the stream to \(route.device.displayName) ended while it was opening")
        }
        logger.info("stream \(stream) open on \(route.device.displayName): \(format)")
        return (Streams.Start.Opened(stream: stream, route: route.session.id, format: format, latency: started.latency), ring)
    }

    /// Closes a stream; only the connection that opened it may.
    func stopStream(_ stream: String, owner: ClientID) throws {
        guard let route = routes.all.first(where: { $0.streams[stream] != nil }), let entry = route.streams[stream] else {
            throw MediaDeviceError(.deviceNotFound, "no stream \(stream) is open (it may have ended with its route)")
        }
        guard entry.owner == owner else { throw MediaDeviceError(.deviceNotFound, "stream \(stream) belongs to another client") }
        close(stream, on: route)
    }

    private func close(_ stream: String, on route: ActiveRoute) {
        route.streams[stream] = nil
        closeAtDriver(stream, on: route)
        logger.info("stream \(stream) closed on \(route.device.displayName)")
    }

    /// Tells the driver a stream is over, whatever becomes of the request that led here.
    private func closeAtDriver(_ stream: String, on route: ActiveRoute) {
        tellDriver(route.record, ToDriver.StopStream(session: route.session.id, stream: stream))
    }

    /// The streams of a route that ended: their openers are told why.
    func endStreams(of route: ActiveRoute, because message: String) {
        for (stream, entry) in route.streams {
            publish(.streamEnded(stream: stream, owner: entry.owner, error: MediaDeviceError(.connectionFailed, "the stream to \(route.device.displayName) ended: \(message)")))
        }
        route.streams.removeAll()
    }

    /// The driver gave up on a stream: its opener is told why.
    func streamFailed(_ stream: String, _ error: MediaDeviceError, record: DriverRecord) {
        guard let route = routes.routes(of: record).first(where: { $0.streams[stream] != nil }), let entry = route.streams[stream] else { return }
        route.streams[stream] = nil  // the driver closed it on its side (sampleStreamFailed)
        logger.error("stream \(stream) to \(route.device.displayName) failed: \(error.message)")
        publish(.streamEnded(stream: stream, owner: entry.owner, error: error))
    }

    /// Streams opened by a connection that went away.
    func stopStreams(ownedBy owner: ClientID) {
        for route in routes.all {
            for (stream, entry) in route.streams where entry.owner == owner { close(stream, on: route) }
        }
    }

    /// About a second of audio; a few frames of video.
    static func ringCapacity(for format: SampleFormat) -> Int {
        switch format {
        case .audio(let rate, _, _): rate * format.frameBytes + 64 * 1024
        case .video: format.frameBytes * 6 + 64 * 1024
        }
    }
}
