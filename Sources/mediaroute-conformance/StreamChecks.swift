import MediaRouteIPC
import MediaRouteWire

/// §11.2 `stream.start` / `stream.stop` with §13's ring: for each real-time capability of the
/// device, the kit makes a ring as the supervisor does (a sealed memfd and an eventfd, passed with
/// `SCM_RIGHTS` as descriptors 0 and 1), writes records as an app would, and sees the driver
/// consume them. A driver that does not take samples must answer 1006.
struct StreamChecks {
    let setup: KitSetup
    let report: ConformanceReport
    let section = "§11.5 and §13 Sample streams"
    /// How long the driver may take to read its first records.
    static let consumeBound: Duration = .seconds(3)

    func run(on driver: DriverUnderTest, route: ActiveRoute) async {
        let takesSamples = (try? DriverIdentity(driver.peer.identity))?.realtimeSampleHandling ?? false
        let kinds: [(MediaOutputDevice.Capabilities, SampleFormat, String)] = [
            (.realtimeAudioStreaming, .defaultAudio, "audio"),
            (.realtimeVideoStreaming, .video(width: 64, height: 48, frameRate: 30), "video"),
        ]
        for (capability, format, name) in kinds {
            let clause = takesSamples ? "\(name): stream.start with the ring's memfd and eventfd is answered, the driver consumes records, stream.stop is answered"
                                      : "\(name): a driver that does not take samples answers stream.start with 1006"
            guard route.device.capabilities.contains(capability) else {
                report.skip(section, clause, because: "\(route.device.displayName) has no \(capability.names.joined()) capability")
                continue
            }
            await report.check(section, clause) {
                try await stream(driver, route, format, name: name, takesSamples: takesSamples)
            }
        }
    }

    private func stream(_ driver: DriverUnderTest, _ route: ActiveRoute, _ format: SampleFormat, name: String, takesSamples: Bool) async throws -> Verdict {
        let ring = try SampleRing.create(format: format, capacity: 1 << 20)
        let id = "k-\(name)"
        let start = ToDriver.StartStream(session: route.session, stream: id, format: format)
        guard takesSamples else {
            do {
                _ = try await driver.call(start, descriptors: [ring.memoryFD, ring.wakeupFD])
                return .fail("stream.start was accepted by a driver whose hello says it takes no samples")
            } catch let error as RPCError {
                return error.code.rawValue == MediaDeviceError.Code.unsupported.rawValue ? .pass : .fail("answered \(error), not 1006")
            }
        }
        let started = try await driver.call(start, descriptors: [ring.memoryFD, ring.wakeupFD])
        let record = [UInt8](repeating: 0, count: format.isAudio ? 480 * format.frameBytes : format.frameBytes)
        for _ in 0..<10 {
            _ = try record.withUnsafeBytes { try ring.write($0, timestamp: SampleRing.monotonicNow()) }
        }
        // The ring tells no one when its consumer reads: its counters are watched, with a bound.
        let deadline = ContinuousClock.now + Self.consumeBound
        while ring.statistics.recordsRead == 0 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        let read = ring.statistics.recordsRead
        ring.closeProducer()
        _ = try await driver.call(ToDriver.StopStream(session: route.session, stream: id))
        guard read > 0 else { return .fail("the driver read no record within \(Self.consumeBound) of 10 written") }
        return .pass("\(read) of 10 records read" + (started.latency.map { ", latency \($0) s" } ?? ""))
    }
}
