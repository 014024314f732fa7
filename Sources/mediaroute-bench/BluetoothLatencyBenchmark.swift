import A2DP
import AVSystemRouting
import CBenchBaseline
import DBus
import Foundation
import Glibc
import Logging
import MediaCodecs
import MediaRouteIPC
import MediaRouteSupervisor
import PrivateDaemons
import Synchronization

/// `bluetooth-latency`: from an app writing samples into its stream to the A2DP packet carrying
/// them arriving at the device's end of the transport, through everything real: the supervisor,
/// the Bluetooth driver process, BlueZ's D-Bus API (the stand-in: no Bluetooth here) and the
/// transport socket BlueZ handed out. The app writes silence at real-time pace with a 20 ms burst
/// twice a second; the device side decodes each packet (libsbc) and notes when a burst starts.
/// Against libsbc and a SOCK_SEQPACKET pair used directly in the same run (a packet's worth
/// handed over, encoded, sent, received, decoded). Beside it, the delay BlueZ reports for the
/// device (`MediaTransport1.Delay`): the device's own share, which an app adds for the whole.
struct BluetoothLatencyBenchmark {
    let bursts: Int
    static let aim: Duration = .milliseconds(40)
    static let address = "AA:BB:CC:00:00:99"

    func run() async throws {
        print("bluetooth-latency: \(bursts) bursts through app, ring, driver, SBC, A2DP transport (48 kHz stereo)")
        var base = [UInt64](repeating: 0, count: 50)
        guard cbb_sbc_seqpacket_latency(50, &base) == 0 else { throw BenchmarkError("the C libsbc/SOCK_SEQPACKET baseline failed") }
        let baseline = LatencySamples(base)
        print(baseline.line("  raw libsbc over a SOCK_SEQPACKET pair, handover to decoded"))

        let blueZ = try await PrivateBlueZ.start()
        let root = NSTemporaryDirectory() + "mediaroute-bench-bluetooth-\(getpid())"
        let (samples, delay) = try await withTearDown {
            try await measure(blueZ, root: root)
        } tearDown: {
            await blueZ.stop()
            try? FileManager.default.removeItem(atPath: root)
        }
        let ours = LatencySamples(samples)
        print(ours.millisecondsLine("  app write to A2DP packet at the device"))
        print("  the device's own delay, as BlueZ reports it: \(format(delay * 1000, digits: 1)) ms; whole latency about \(format(ours.median / 1e6 + delay * 1000, digits: 1)) ms")
        print("  median under \(Self.aim.milliseconds) ms: \(ours.median < Double(Self.aim.milliseconds) * 1e6 ? "yes" : "no")")
        printResult("bluetooth-latency", ratio: ours.median / baseline.median, target: Double(Self.aim.milliseconds) * 1e6 / baseline.median)
    }

    private func measure(_ blueZ: PrivateBlueZ, root: String) async throws -> ([UInt64], Double) {
        let bus = try await DBusConnection.connect(address: blueZ.busAddress)
        defer { Task { await bus.close() } }
        func mock(_ method: String, _ arguments: DBusValue...) async throws {
            try await bus.call(destination: "org.bluez", path: "/", interface: "org.bluez.Mock", method: method, arguments)
        }
        try await mock("AddAdapter", .string("hci0"), .string("Bench Laptop"))
        try await mock("AddAudioDevice", .string("hci0"), .string(Self.address), .string("Bench Speaker"), .string("audio-card"), .string("just-works"), .string(""))
        try FileManager.default.createDirectory(atPath: root + "/drivers", withIntermediateDirectories: true)
        let manifest: JSONValue = [
            "protocol": "org.mediaroute.bluetooth",
            "exportedType": ["identifier": "org.mediaroute.bluetooth", "conformsTo": ["public.media-sharing-protocol"], "description": "Bluetooth"],
            "executable": .string(Executables.sibling("mediaroute-bluetooth-driver")),
            "environment": ["DBUS_SYSTEM_BUS_ADDRESS": .string(blueZ.busAddress)],
        ]
        try Data(JSONWriter.encode(manifest)).write(to: URL(fileURLWithPath: root + "/drivers/bluetooth.json"))
        var logger = Logger(label: "bench")
        logger.logLevel = .critical
        let supervisor = Supervisor(configuration: SupervisorConfiguration(driversDirectories: [root + "/drivers"], stateDirectory: root + "/state"), logger: logger)
        try await supervisor.start()
        var result: ([UInt64], Double) = ([], 0)
        try await withTearDown {
            result = try await stream(supervisor, bus: bus, root: root)
        } tearDown: {
            await supervisor.shutdown()
        }
        return result
    }

    /// The app's side writes; the device's side reads packets on a thread of its own.
    private func stream(_ supervisor: Supervisor, bus: DBusConnection, root: String) async throws -> ([UInt64], Double) {
        let socket = root + "/mediarouted.sock"
        let server = try await ControlServer.start(path: socket, supervisor: supervisor, logger: .init(label: "bench"))
        let controller = AVSystemRouteController(configuration: .init(applicationIdentifier: "org.mediaroute.bench",
                                                                      supportedProtocols: ["org.mediaroute.bluetooth"], socketPath: socket))
        defer {
            server.close()
            Task { await controller.invalidate() }
        }
        let listed = Flag()
        let picker = await supervisor.openPicker { entries in if entries.contains(where: { $0.name == "Bench Speaker" }) { listed.set() } }
        let deadline = ContinuousClock.now + .seconds(20)
        while !listed.isSet {
            guard ContinuousClock.now < deadline else { throw BenchmarkError("Bench Speaker was not discovered within 20 s") }
            try await Task.sleep(for: .milliseconds(1))
        }
        await supervisor.closePicker(picker.id)
        _ = try await supervisor.activate("Bench Speaker") { _ in nil }
        guard controller.addObserver(RouteWaiter.shared) else { throw BenchmarkError("the app could not reach mediarouted") }
        while controller.activeRoutes.isEmpty {
            guard ContinuousClock.now < deadline else { throw BenchmarkError("the app never saw the route") }
            try await Task.sleep(for: .milliseconds(5))
        }
        let stream = try await controller.activeRoutes[0].startAudioStream(format: .audio(sampleRate: 48_000, channels: 2, sampleType: .int16))

        let device = Self.address.replacingOccurrences(of: ":", with: "_")
        let transport = try await waitForActiveTransport(bus, device: "/org/bluez/hci0/dev_\(device)")
        guard let peer = try await bus.call(destination: "org.bluez", path: "/", interface: "org.bluez.Mock", method: "TransportPeer",
                                            [.string(Self.address)]).first?.fileDescriptor?.take() else { throw BenchmarkError("no transport peer") }
        let delay = Double(try await bus.property("Delay", of: "org.bluez.MediaTransport1", at: transport, on: "org.bluez").uint16 ?? 0) / 10_000
        let onsets = OnsetListener(fd: peer)
        onsets.start()
        defer { onsets.stop() }

        var burstTimes: [UInt64] = []
        let record = 960  // 20 ms
        let silence = [Int16](repeating: 0, count: record * 2)
        var burst = [Int16](repeating: 0, count: record * 2)
        for i in 0..<record { burst[2 * i] = (i / 24) % 2 == 0 ? 20_000 : -20_000; burst[2 * i + 1] = burst[2 * i] }
        let start = ContinuousClock.now
        for chunk in 0..<(bursts * 25 + 25) {
            let isBurst = chunk % 25 == 12 && burstTimes.count < bursts
            let time = SampleRing.monotonicNow()
            if isBurst { burstTimes.append(time) }
            _ = try (isBurst ? burst : silence).withUnsafeBufferPointer { try stream.write($0, timestamp: time) }
            try await Task.sleep(until: start + .milliseconds(20 * (chunk + 1)))
        }
        try await stream.stop()
        let heard = onsets.stop()
        var latencies: [UInt64] = []
        for (index, written) in burstTimes.enumerated() {
            let next = index + 1 < burstTimes.count ? burstTimes[index + 1] : .max
            if let onset = heard.first(where: { $0 >= written && $0 < next }) { latencies.append(onset - written) }
        }
        guard latencies.count == burstTimes.count else { throw BenchmarkError("the device heard \(latencies.count) of \(burstTimes.count) bursts") }
        return (latencies, delay)
    }

    private func waitForActiveTransport(_ bus: DBusConnection, device: String) async throws -> DBusObjectPath {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            let objects = try await bus.managedObjects(on: "org.bluez")
            if let (path, interfaces) = objects.first(where: { $0.value["org.bluez.MediaTransport1"]?["Device"]?.objectPath?.rawValue == device }),
               interfaces["org.bluez.MediaTransport1"]?["State"]?.string == "active" {
                return path
            }
            try await Task.sleep(for: .milliseconds(2))
        }
        throw BenchmarkError("the driver did not acquire the transport within 10 s")
    }
}

/// The device's end: reads A2DP packets as they come, decodes them, and notes the arrival time of
/// each packet where sound starts after silence.
private final class OnsetListener: Sendable {
    private let fd: Int32
    private let onsets = Mutex<[UInt64]>([])
    private let running = Flag()
    private let finished = DispatchSemaphore(value: 0)

    init(fd: Int32) { self.fd = fd }

    func start() {
        Thread.detachNewThread { [self] in
            defer { finished.signal() }
            guard let decoder = try? SBCDecoder() else { return }
            var packet = [UInt8](repeating: 0, count: 4096)
            var quiet = true
            while !running.isSet {
                var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&ready, 1, 50) > 0 else { continue }
                let count = recv(fd, &packet, packet.count, 0)
                let arrived = SampleRing.monotonicNow()
                guard count > 0, let media = try? A2DPMediaPacket(bytes: Array(packet[0..<count])),
                      let pcm = try? media.frames.withUnsafeBytes({ try decoder.decode($0) }) else { break }
                let loud = pcm.contains { abs(Int($0)) > 8_000 }
                if loud, quiet { onsets.withLock { $0.append(arrived) } }
                quiet = !loud
            }
        }
    }

    @discardableResult
    func stop() -> [UInt64] {
        if !running.isSet {
            running.set()
            finished.wait()
            close(fd)
        }
        return onsets.withLock { $0 }
    }
}
