import ArgumentParser
import Foundation
import MediaCodecs
import MediaRouteIPC
import MediaRouteWire
import Synchronization

struct StreamCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stream",
        abstract: "Stream audio from a file, and/or a video test pattern, to a device in real time.",
        discussion: """
        The samples go through shared memory to the device's driver, which encodes and sends them. A WAV \
        file is read directly; other formats are decoded by ffmpeg. --test-pattern streams moving colour \
        bars (the stand-in for screen mirroring). A progress line shows the time, the bitrate the driver \
        sends, how full the ring is, and the samples dropped because the device could not keep up.
        """)
    @OptionGroup var options: GlobalOptions
    @Argument(help: "An audio file (WAV, or anything ffmpeg reads).") var file: String?
    @Option(help: "The device's name or id.") var to: String
    @Flag(help: "Also stream a video test pattern.") var testPattern = false
    @Option(help: "The test pattern's size, WIDTHxHEIGHT.") var size = "1280x720"
    @Option(help: "The test pattern's frame rate.") var fps = 30
    @Option(help: "Stop after this many seconds (default: the end of the file, or 10 s of test pattern).") var duration: Double?
    @Option(help: "The pairing code, if activation asks for one.") var code: String?

    func validate() throws {
        guard file != nil || testPattern else { throw ValidationError("give an audio file, --test-pattern, or both") }
        _ = try dimensions
        guard (1...120).contains(fps) else { throw ValidationError("--fps must be from 1 to 120, not \(fps)") }
        if let duration, !(duration > 0 && duration <= 86_400) { throw ValidationError("--duration must be more than 0 and at most 86400 seconds, not \(duration)") }
    }

    private var dimensions: (Int, Int) {
        get throws {
            let parts = size.split(separator: "x").compactMap { Int($0) }
            guard parts.count == 2 else { throw ValidationError("--size must be WIDTHxHEIGHT, such as 1280x720, not \"\(size)\"") }
            if let problem = SampleFormat.video(width: parts[0], height: parts[1], frameRate: 30).problem { throw ValidationError("--size \(size): \(problem)") }
            return (parts[0], parts[1])
        }
    }

    func run() async throws {
        let source = try file.map(AudioSource.init(path:))
        let ended = Mutex<String?>(nil)
        let client = try await options.connect(pairingCode: code, onStreamEnded: { report in ended.withLock { $0 = report.error.message } })
        defer { Task { await client.close() } }
        try await client.activateIfNeeded(to)

        var streams: [(id: String, ring: SampleRing)] = []
        func open(_ format: SampleFormat) async throws -> SampleRing {
            let (opened, descriptors) = try await client.callReceivingDescriptors(Streams.Start(route: to, format: format))
            let ring = try SampleRing(descriptors: descriptors)
            streams.append((opened.stream, ring))
            return ring
        }
        let stop = Atomic<Bool>(false)
        var writers: [Thread] = []
        let finished = Atomic<Int>(0)
        if let source {
            let ring = try await open(source.format)
            writers.append(Thread { Self.writeAudio(source, to: ring, for: duration, stop: stop); finished.add(1, ordering: .relaxed) })
        }
        if testPattern {
            let (width, height) = try dimensions
            let ring = try await open(.video(width: width, height: height, frameRate: fps))
            writers.append(Thread { Self.writeVideo(to: ring, fps: fps, for: duration ?? 10, stop: stop); finished.add(1, ordering: .relaxed) })
        }
        writers.forEach { $0.start() }
        let interrupt = try Interrupt()
        let interrupted = Task { if await interrupt.wait() { stop.store(true, ordering: .relaxed) } }
        let started = ContinuousClock.now
        var lastBytes: UInt64 = 0, lastTime = started
        let tty = isatty(STDERR_FILENO) == 1
        var reason: String?
        while finished.load(ordering: .relaxed) < writers.count {
            try? await Task.sleep(for: tty ? .milliseconds(250) : .seconds(1))
            if let message = ended.withLock({ $0 }) {
                reason = message
                stop.store(true, ordering: .relaxed)
            }
            // The counters live in memory the driver writes too: read them as untrusted numbers.
            let statistics = streams.map { $0.ring.statistics }
            let bytes = statistics.reduce(0) { $0 &+ $1.consumerOutputBytes }
            let now = ContinuousClock.now
            let kbps = Double(bytes >= lastBytes ? bytes - lastBytes : 0) * 8 / max((now - lastTime).seconds, 0.001) / 1000
            (lastBytes, lastTime) = (bytes, now)
            let fill = zip(streams, statistics).map { Double($1.fill) / Double($0.ring.capacity) }.max() ?? 0
            let line = String(format: "%@  %6.0f kbit/s  ring %3.0f%%  overruns %llu", Self.clock(now - started), kbps, fill * 100,
                              statistics.reduce(0) { $0 &+ $1.overruns })
            FileHandle.standardError.write(Data((tty ? "\r" + line : line + "\n").utf8))
        }
        interrupted.cancel()
        interrupt.restore()
        if reason == nil, let failure = source?.failure { reason = failure }
        if tty { FileHandle.standardError.write(Data("\n".utf8)) }
        for stream in streams {
            stream.ring.closeProducer()
            _ = try? await client.call(Streams.Stop(stream: stream.id))
        }
        let statistics = streams.map { $0.ring.statistics }
        let elapsed = (ContinuousClock.now - started).seconds
        let overruns = statistics.reduce(0) { $0 &+ $1.overruns }
        let summary = String(format: "streamed %.1f s to %@: %.0f kbit/s sent, %llu overruns, %llu underruns", elapsed, to,
                             Double(statistics.reduce(0) { $0 &+ $1.consumerOutputBytes }) * 8 / max(elapsed, 0.001) / 1000,
                             overruns, statistics.reduce(0) { $0 &+ $1.underruns })
        if let reason { throw CLIError("\(summary); stopped early: \(reason)") }
        options.output(Summary(seconds: elapsed, overruns: overruns)) { summary }
    }

    /// What `--json` prints at the end.
    struct Summary: Encodable {
        let seconds: Double
        let overruns: UInt64
    }

    /// Writes the file in 20 ms records, at its own pace, a little ahead of real time.
    static func writeAudio(_ source: AudioSource, to ring: SampleRing, for duration: Double?, stop: borrowing Atomic<Bool>) {
        guard case .audio(let rate, _, _) = source.format else { return }
        let chunk = rate / 50
        let start = SampleRing.monotonicNow()
        var sent = 0
        while !stop.load(ordering: .relaxed), duration.map({ Double(sent) / Double(rate) < $0 }) ?? true {
            let samples = source.read(frames: chunk)
            if samples.isEmpty { break }
            let due = start + UInt64(sent) * 1_000_000_000 / UInt64(rate)
            sleep(until: due > 60_000_000 ? due - 60_000_000 : 0)
            _ = samples.withUnsafeBytes { try? ring.write($0, timestamp: SampleRing.monotonicNow()) }
            sent += chunk
        }
    }

    /// Writes the test pattern, one frame per frame interval.
    static func writeVideo(to ring: SampleRing, fps: Int, for duration: Double, stop: borrowing Atomic<Bool>) {
        guard case .video(let width, let height, _) = ring.format else { return }
        let pattern = TestPattern(width: width, height: height)
        var frame = [UInt8](repeating: 0, count: pattern.frameBytes)
        let start = SampleRing.monotonicNow()
        for index in 0..<Int(duration * Double(fps)) where !stop.load(ordering: .relaxed) {
            sleep(until: start + UInt64(index) * 1_000_000_000 / UInt64(fps))
            frame.withUnsafeMutableBytes { pattern.draw(index, into: $0) }
            _ = frame.withUnsafeBytes { try? ring.write($0, timestamp: SampleRing.monotonicNow()) }
        }
    }

    private static func sleep(until deadline: UInt64) {
        let now = SampleRing.monotonicNow()
        guard deadline > now else { return }
        usleep(UInt32(min((deadline - now) / 1000, 1_000_000)))
    }

    private static func clock(_ duration: Duration) -> String {
        let total = duration.seconds
        return String(format: "%02d:%04.1f", Int(total) / 60, total.truncatingRemainder(dividingBy: 60))
    }
}
