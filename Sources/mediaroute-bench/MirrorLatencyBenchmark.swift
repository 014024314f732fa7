import AVSystemRouting
import Foundation
import MediaRouteIPC
import MediaRouteSupervisor
import PrivateDaemons
import ReferenceProtocol
import ScreenMirroring

/// `mirror-latency`: a change on the screen to the decoded frame at the receiver. A private Xvfb's
/// whole screen turns white or black (painted by our own X client); the time runs from the paint
/// request to the first decoded frame showing it. Ours: `startScreenMirroring` (MIT-SHM capture,
/// the video ring, the reference driver's libx264, RTP over loopback, the receiver recording into
/// a FIFO). Baseline, in the same run on the same display: `ffmpeg -f x11grab` → libx264 with the
/// driver's settings (veryfast, zerolatency, one thread) → a pipe. Both are decoded by the same
/// low-delay ffmpeg decoder, whose frames are timed as they come out.
struct MirrorLatencyBenchmark {
    let changes: Int
    static let (width, height, frameRate) = (1280, 720, 30)
    static let target = 1.2

    func run() async throws {
        print("mirror-latency: \(changes) changes of a \(Self.width)x\(Self.height) screen (Xvfb) at \(Self.frameRate) fps to the decoded frame")
        let screen = try await PrivateXServer.start(width: Self.width, height: Self.height)
        try await withTearDown {
            let painter = try X11Painter(display: screen.display)
            painter.paintTestCard()
            let cost = try await CaptureCostComparison.measure(display: screen.display, width: Self.width, height: Self.height, frameRate: Self.frameRate)
            print("  capture alone, CPU per second: in process (MIT-SHM, our I420 scaling) \(format(cost.inProcess * 1000, digits: 1)) ms, "
                  + "ffmpeg x11grab child to I420 into a pipe \(format(cost.ffmpegChild * 1000, digits: 1)) ms")
            let baseline = LatencySamples(try await measureBaseline(screen, painter))
            print(baseline.millisecondsLine("  ffmpeg x11grab, libx264 zerolatency, pipe, ffmpeg decode"))
            let ours = LatencySamples(try await measureOurs(screen, painter))
            print(ours.millisecondsLine("  mirroring: MIT-SHM, ring, driver, RTP, receiver, ffmpeg decode"))
            print("  p99 ratio: \(format(ours.p99 / baseline.p99))")
            printResult("mirror-latency", ratio: ours.median / baseline.median, target: Self.target)
        } tearDown: {
            await screen.stopFromTask()
        }
    }

    /// Paints `changes` changes, paced irregularly against the capture's ticks, and times each
    /// to the first decoded frame that shows it.
    private func measure(_ painter: X11Painter, _ watcher: DecodedFrameWatcher) async throws -> [UInt64] {
        let changes = changes
        return try await onThreadOfItsOwn {
            painter.fill(0x000000)
            while true {  // warm-up: the decoder shows the black screen
                guard let frame = watcher.next(within: .seconds(15)) else { throw BenchmarkError("no decoded frame within 15 s of starting") }
                if frame.brightness < 60 { break }
            }
            var latencies: [UInt64] = []
            for change in 0..<changes {
                usleep(UInt32(150_000 + change * 37_000 % 150_000))  // the stimulus's pace, not a wait for anything
                let white = change % 2 == 0
                let painted = now()
                painter.fill(white ? 0xFFFFFF : 0x000000)
                while true {
                    guard let frame = watcher.next(within: .seconds(3)) else { throw BenchmarkError("change \(change) never showed in a decoded frame (3 s)") }
                    if frame.arrived > painted, white ? frame.brightness > 125 : frame.brightness < 125 {
                        latencies.append(frame.arrived - painted)
                        break
                    }
                }
            }
            return latencies
        }
    }

    private func measureBaseline(_ screen: PrivateXServer, _ painter: X11Painter) async throws -> [UInt64] {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw BenchmarkError("cannot make a pipe: errno \(errno)") }
        let encoder: ChildProcess
        let watcher: DecodedFrameWatcher
        do {
            defer { ends.forEach { close($0) } }  // the children hold their ends
            encoder = try ChildProcess(executable: "/usr/bin/ffmpeg", arguments: [
                "-hide_banner", "-loglevel", "error", "-f", "x11grab", "-draw_mouse", "0", "-framerate", "\(Self.frameRate)",
                "-video_size", "\(Self.width)x\(Self.height)", "-i", screen.display, "-pix_fmt", "yuv420p", "-c:v", "libx264", "-preset", "veryfast",
                "-tune", "zerolatency", "-threads", "1", "-g", "\(Self.frameRate * 2)", "-f", "h264", "-flush_packets", "1", "pipe:1"],
                standardOutput: ends[1])
            do {
                watcher = try DecodedFrameWatcher(input: "pipe:0", standardInput: ends[0], width: Self.width, height: Self.height)
            } catch {
                _ = await encoder.terminate(grace: .seconds(2))
                throw error
            }
        }
        return try await withTearDown { try await measure(painter, watcher) } tearDown: {
            _ = await encoder.terminate(grace: .seconds(2))
            await watcher.stop()
        }
    }

    private func measureOurs(_ screen: PrivateXServer, _ painter: X11Painter) async throws -> [UInt64] {
        let recordings = NSTemporaryDirectory() + "mediaroute-bench-mirror-\(getpid())"
        try FileManager.default.createDirectory(atPath: recordings, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: recordings) }
        // The receiver records the stream (r1) into a FIFO the decoder reads as it comes.
        guard mkfifo(recordings + "/r1.h264", 0o600) == 0 else { throw BenchmarkError("cannot make a FIFO in \(recordings): errno \(errno)") }
        return try await ReferenceStage.run(receiverArguments: ["--record", recordings]) { stage in
            let watcher = try DecodedFrameWatcher(input: recordings + "/r1.h264", width: Self.width, height: Self.height)
            return try await withTearDown {
                let supervisor = try await stage.supervisor(state: "state")
                var latencies: [UInt64] = []
                try await stage.whileRunning(supervisor) { latencies = try await mirror(supervisor, stage, screen, painter, watcher) }
                return latencies
            } tearDown: {
                await watcher.stop()
            }
        }
    }

    /// The app's side: a route, screen mirroring on it, the changes measured.
    private func mirror(_ supervisor: Supervisor, _ stage: ReferenceStage, _ screen: PrivateXServer, _ painter: X11Painter,
                        _ watcher: DecodedFrameWatcher) async throws -> [UInt64] {
        try await stage.withAppRoute(supervisor) { route in
            let mirroring = try await route.startScreenMirroring(
                .init(display: screen.display, width: Self.width, height: Self.height, frameRate: Self.frameRate))
            return try await withTearDown { try await measure(painter, watcher) } tearDown: {
                try? await mirroring.stop()
            }
        }
    }
}
