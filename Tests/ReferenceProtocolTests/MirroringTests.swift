@testable import AVSystemRouting
import Foundation
import MediaRouteIPC
import PrivateDaemons
import ScreenMirroring
import Synchronization
import Testing
import TestSupport

/// Screen mirroring end to end: a private Xvfb with a picture the test paints through its own X
/// client, captured through MIT-SHM, written into the route's video ring, encoded by the reference
/// driver (libx264), sent as RTP, recorded by the receiver, and decoded by ffmpeg for comparison
/// with what was captured.
@Suite("Reference protocol: mirroring a screen", .serialized, .timeLimit(.minutes(3)))
struct MirroringTests {
    /// The X server's open sockets: its listening ones and one per connected client.
    private func sockets(of pid: Int32) throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").filter {
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)"))?.hasPrefix("socket:") ?? false
        }.count
    }

    /// One frame of the (still) screen, captured as mirroring captures it.
    private func capturedFrame(_ display: String, width: Int, height: Int) throws -> Data {
        let capture = try ScreenCaptureSession(.init(display: display, width: width, height: height, frameRate: 30))
        let frame = Mutex<Data?>(nil)
        let got = DispatchSemaphore(value: 0)
        try capture.start { bytes, _ in
            frame.withLock { $0 = Data(bytes) }
            got.signal()
            return .end
        }
        got.wait()
        capture.stop()
        return try #require(frame.withLock { $0 })
    }

    @Test func thePaintedScreenArrivesDecodedAtItsRateAndCaptureEndsWithMirroring() async throws {
        let screen = try await PrivateXServer.start(width: 640, height: 480)
        try await withTearDown {
            let painter = try X11Painter(display: screen.display)
            painter.paintTestCard()
            let idle = try sockets(of: screen.pid)  // the painter's connection and the listening sockets
            try await ReferenceTestBed.run { bed in
                let record = bed.harness.root + "/recordings"
                let app = bed.app()
                let observer = AppObserver()
                #expect(app.addObserver(observer))
                let receiver = try await bed.listedReceiver(arguments: ["--auth", "none", "--record", record])
                _ = try await bed.activate("Den TV") { _ in nil }
                try await bed.harness.waitUntil("app has the route") { await MainActor.run { observer.route != nil } }
                let route = try #require(await MainActor.run { observer.route })
                #expect(try sockets(of: screen.pid) == idle, "no capture before mirroring is asked for")

                let mirroring = try await route.startScreenMirroring(.init(display: screen.display, width: 320, height: 240, frameRate: 30))
                #expect(mirroring.format == .video(width: 320, height: 240, frameRate: 30))
                #expect(try sockets(of: screen.pid) == idle + 1, "the capture's connection")
                // The frame rate over a two-second window (a measuring window, not a wait for something).
                try await waitUntil("the first frames") { mirroring.statistics.frames >= 5 }
                let (first, firstTime) = (mirroring.statistics, ContinuousClock.now)
                try await Task.sleep(for: .seconds(2))
                let last = mirroring.statistics, elapsed = (ContinuousClock.now - firstTime).seconds
                // The pace: a tick every 1/30 s, each either a frame or (on a machine too busy for it)
                // one counted late and skipped, never made up in a burst; a busy machine (the whole
                // suite beside it) may miss a few, not most.
                let ticks = Double(last.frames - first.frames + last.late - first.late) / elapsed
                #expect(abs(ticks - 30) <= 1.5, "\(ticks) ticks a second: \(last)")
                #expect(last.late - first.late <= max(3, (last.frames - first.frames) / 5), "most ticks are frames: \(last)")

                try await mirroring.stop()
                #expect(!mirroring.isCapturing)
                let captured = mirroring.statistics.frames
                painter.sync()  // a round trip: the server has seen the capture's connection close by now
                #expect(try sockets(of: screen.pid) == idle, "the capture's connection is gone with mirroring")
                #expect(mirroring.statistics.frames == captured, "no frame captured after stop")
                try await receiver.waitFor("stream r1 ended: ")
                let sent = Int(mirroring.stream.statistics.recordsRead)
                #expect(sent >= captured - 2 && sent <= captured, "\(sent) of \(captured) frames read by the driver")

                // Every decoded frame against the captured picture (the screen stood still).
                let reference = try capturedFrame(screen.display, width: 320, height: 240)
                let decode = try await ChildOutput.run("/usr/bin/ffmpeg", ["-hide_banner", "-loglevel", "error", "-i", record + "/r1.h264", "-f", "rawvideo",
                                                                           "-pix_fmt", "yuv420p", bed.harness.root + "/decoded.yuv"])
                #expect(decode.termination == .exited(0), "\(decode.standardError)")
                let decoded = try Data(contentsOf: URL(fileURLWithPath: bed.harness.root + "/decoded.yuv"))
                #expect(decoded.count == reference.count * sent, "\(decoded.count / reference.count) frames decoded of \(sent) sent")
                let worst = try await onThreadOfItsOwn {
                    stride(from: 0, to: decoded.count, by: reference.count).map { StreamingTests.psnr(decoded[$0..<($0 + reference.count)], reference) }.min() ?? 0
                }
                #expect(worst >= 30, "the worst frame's PSNR is \(worst) dB")
            }
        } tearDown: {
            await screen.stopFromTask()
        }
    }

    @Test func captureEndsWhenTheDeviceGoesAway() async throws {
        let screen = try await PrivateXServer.start(width: 320, height: 240)
        try await withTearDown {
            let painter = try X11Painter(display: screen.display)
            let idle = try sockets(of: screen.pid)
            try await ReferenceTestBed.run { bed in
                let app = bed.app()
                let observer = AppObserver()
                #expect(app.addObserver(observer))
                let receiver = try await bed.listedReceiver(arguments: ["--auth", "none"])
                _ = try await bed.activate("Den TV") { _ in nil }
                try await bed.harness.waitUntil("app has the route") { await MainActor.run { observer.route != nil } }
                let route = try #require(await MainActor.run { observer.route })
                let mirroring = try await route.startScreenMirroring(.init(display: screen.display, frameRate: 30))
                #expect(mirroring.format == .video(width: 320, height: 240, frameRate: 30), "the screen's own size")
                try await waitUntil("frames flow") { mirroring.statistics.frames >= 3 }

                await receiver.stop()  // the device goes away: its route and the stream end, and the capture with them
                try await waitUntil("the capture ended with the stream") { !mirroring.isCapturing }
                #expect(mirroring.statistics.ended == "the stream the frames went to has ended", "\(mirroring.statistics)")
                painter.sync()
                #expect(try sockets(of: screen.pid) == idle, "the capture's connection is gone")
                try? await mirroring.stop()
            }
        } tearDown: {
            await screen.stopFromTask()
        }
    }

    @Test func theOperatorMirrorsADisplayFromTheCLI() async throws {
        let screen = try await PrivateXServer.start(width: 640, height: 360)
        try await withTearDown {
            try X11Painter(display: screen.display).paintTestCard()
            try await ReferenceTestBed.run { bed in
                let record = bed.harness.root + "/recordings"
                let receiver = try await bed.listedReceiver(arguments: ["--auth", "none", "--record", record])
                let cli = try await ChildOutput.run(DaemonHarness.binary("mediaroute"), ["--socket", bed.socket, "mirror", "--to", "Den TV",
                                                                                         "--display", screen.display, "--fps", "25", "--duration", "2"])
                #expect(cli.termination == .exited(0), "\(cli.standardError)")
                #expect(cli.standardError.contains("mirroring \(screen.display) (640x360) to Den TV as 640x360 at 25 fps"), "\(cli.standardError)")
                #expect(cli.standardOutput.hasPrefix("mirrored \(screen.display) to Den TV for 2."), "\(cli.standardOutput)")
                try await receiver.waitFor("stream r1 ended: ")
                let probe = try await ChildOutput.run("/usr/bin/ffprobe", ["-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                                                                            "stream=nb_read_frames,width,height", "-of", "csv=p=0", record + "/r1.h264"])
                let fields = probe.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",").compactMap { Int($0) }
                #expect(fields.count == 3 && fields[0] == 640 && fields[1] == 360 && abs(fields[2] - 50) <= 2, "\(probe.standardOutput) \(probe.standardError)")

                // No display there: said before any stream is opened.
                let nowhere = try await ChildOutput.run(DaemonHarness.binary("mediaroute"), ["--socket", bed.socket, "mirror", "--to", "Den TV", "--display", ":4242"])
                #expect(nowhere.termination == .exited(1) && nowhere.standardError.contains("cannot connect to the X display :4242"), "\(nowhere.standardError)")
            }
        } tearDown: {
            await screen.stopFromTask()
        }
    }
}
