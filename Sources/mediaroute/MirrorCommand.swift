import ArgumentParser
import Foundation
import MediaRouteIPC
import MediaRouteWire
import ScreenCapture
import Synchronization

struct MirrorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mirror",
        abstract: "Mirror the screen (an X11 display, or a Wayland desktop's through its ScreenCast portal) to a device in real time, until Ctrl-C.",
        discussion: """
        The screen is grabbed through MIT-SHM, scaled to the frames' size (the screen's, fitted within \
        1920x1080, unless --size says otherwise) and written at --fps into the device's video stream; its \
        driver encodes and sends it. Capture starts when this command has the stream and stops when it ends. \
        On a Wayland desktop (WAYLAND_DISPLAY set) and without --display, the desktop's ScreenCast portal \
        asks which screen to share (and whether to); its PipeWire stream is captured, the last frame \
        repeated while the screen stands still.
        """)
    @OptionGroup var options: GlobalOptions
    @Option(help: "The device's name or id.") var to: String
    @Option(help: "The X display to capture (default: the ScreenCast portal on a Wayland desktop, else $DISPLAY).") var display: String?
    @Option(help: "The frames' size, WIDTHxHEIGHT (default: the screen's, fitted within 1920x1080).") var size: String?
    @Option(help: "Frames a second.") var fps = 30
    @Option(help: "Stop after this many seconds (default: at Ctrl-C).") var duration: Double?
    @Option(help: "The pairing code, if activation asks for one.") var code: String?

    func validate() throws {
        _ = try dimensions
        guard (1...120).contains(fps) else { throw ValidationError("--fps must be from 1 to 120, not \(fps)") }
        if let duration, !(duration > 0 && duration <= 86_400) { throw ValidationError("--duration must be more than 0 and at most 86400 seconds, not \(duration)") }
    }

    private var dimensions: (Int, Int)? {
        get throws {
            guard let size else { return nil }
            let parts = size.split(separator: "x").compactMap { Int($0) }
            guard parts.count == 2 else { throw ValidationError("--size must be WIDTHxHEIGHT, such as 1280x720, not \"\(size)\"") }
            if let problem = SampleFormat.video(width: parts[0], height: parts[1], frameRate: 30).problem { throw ValidationError("--size \(size): \(problem)") }
            return (parts[0], parts[1])
        }
    }

    func run() async throws {
        let asked = try dimensions
        // Connecting to the display first: no display, no stream opened on the device.
        let capture: ScreenCaptureSession
        do {
            capture = try await ScreenCaptureSession.open(.init(display: display, width: asked?.0, height: asked?.1, frameRate: fps))
        } catch {
            throw CLIError("\(error)")
        }
        defer { capture.stop() }
        let ended = Mutex<String?>(nil)
        let client = try await options.connect(pairingCode: code, onStreamEnded: { report in ended.withLock { $0 = report.error.message } })
        defer { Task { await client.close() } }
        try await client.activateIfNeeded(to)
        let (opened, descriptors) = try await client.callReceivingDescriptors(
            Streams.Start(route: to, format: .video(width: capture.width, height: capture.height, frameRate: capture.frameRate)))
        let ring = try SampleRing(descriptors: descriptors)
        try capture.start { frame, timestamp in
            switch try? ring.write(frame, timestamp: timestamp) {
            case .written?, .full?: .next  // a full ring drops the frame: the ring counts it in overruns
            case .consumerClosed?, nil: .end
            }
        }
        FileHandle.standardError.write(Data("mirroring \(capture.display) (\(capture.screenWidth)x\(capture.screenHeight)) to \(to) as \(capture.width)x\(capture.height) at \(capture.frameRate) fps\n".utf8))

        let interrupt = try Interrupt()
        let stop = Atomic<Bool>(false)
        let interrupted = Task { if await interrupt.wait() { stop.store(true, ordering: .relaxed) } }
        let started = ContinuousClock.now
        let deadline = duration.map { started + .milliseconds(Int($0 * 1000)) }
        let tty = isatty(STDERR_FILENO) == 1
        var reason: String?
        var (lastBytes, lastTime) = (UInt64(0), started)
        while !stop.load(ordering: .relaxed), deadline.map({ ContinuousClock.now < $0 }) ?? true {
            // A progress line, not synchronisation: each turn reads counters and may end the loop.
            try? await Task.sleep(for: min(tty ? .milliseconds(250) : .seconds(1), deadline.map { max($0 - ContinuousClock.now, .zero) } ?? .seconds(1)))
            if let message = ended.withLock({ $0 }) ?? capture.statistics.ended {
                reason = message
                break
            }
            let statistics = ring.statistics  // memory the driver writes too: untrusted numbers
            let now = ContinuousClock.now
            let kbps = Double(statistics.consumerOutputBytes &- lastBytes) * 8 / max((now - lastTime).seconds, 0.001) / 1000
            (lastBytes, lastTime) = (statistics.consumerOutputBytes, now)
            let line = String(format: "%@  %5d frames  %6.0f kbit/s  overruns %llu", Self.clock(now - started), capture.statistics.frames, kbps, statistics.overruns)
            FileHandle.standardError.write(Data((tty ? "\r" + line : line + "\n").utf8))
        }
        interrupted.cancel()
        interrupt.restore()
        if tty { FileHandle.standardError.write(Data("\n".utf8)) }
        capture.stop()  // the display connection is closed before the stream ends
        ring.closeProducer()
        _ = try? await client.call(Streams.Stop(stream: opened.stream))
        let elapsed = (ContinuousClock.now - started).seconds
        let captured = capture.statistics
        let statistics = ring.statistics
        let summary = String(format: "mirrored %@ to %@ for %.1f s: %d frames at %.1f fps, %d late, %llu dropped, %.0f kbit/s sent", capture.display, to, elapsed,
                             captured.frames, Double(captured.frames) / max(elapsed, 0.001), captured.late, statistics.overruns,
                             Double(statistics.consumerOutputBytes) * 8 / max(elapsed, 0.001) / 1000)
        if let reason { throw CLIError("\(summary); stopped early: \(reason)") }
        options.output(Summary(seconds: elapsed, frames: captured.frames, late: captured.late, overruns: statistics.overruns)) { summary }
    }

    /// What `--json` prints at the end.
    struct Summary: Encodable {
        let seconds: Double
        let frames: Int
        let late: Int
        let overruns: UInt64
    }

    private static func clock(_ duration: Duration) -> String {
        let total = duration.seconds
        return String(format: "%02d:%04.1f", Int(total) / 60, total.truncatingRemainder(dividingBy: 60))
    }
}
