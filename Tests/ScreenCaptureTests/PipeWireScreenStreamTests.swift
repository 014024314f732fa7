import Foundation
import PrivateDaemons
import ScreenCapture
import Synchronization
import Testing

/// A Wayland screen through PipeWire: a headless mutter of the test's own (software rendering, a
/// virtual monitor, Xwayland, its own PipeWire and WirePlumber on a private bus), showing a test
/// card an X client paints on a window over the whole screen, consumed by `PipeWireScreenStream`.
///
/// The stream's node comes from mutter's own ScreenCast API, not from xdg-desktop-portal: the
/// portal's Start asks a person in GNOME's dialog (no one answers it in a test), and the wlroots
/// backend cannot start a stream without DMA-BUF (see `ScreenCastPortalTests`). Behind the portal,
/// GNOME's backend makes the very same mutter call, so the stream consumed is the one a desktop gives.
@Suite("Screen capture through a PipeWire ScreenCast stream of a headless mutter", .serialized, .timeLimit(.minutes(3)))
struct PipeWireScreenStreamTests {
    /// A fresh mutter with the test card painted, and a screencast of its monitor, for `body`;
    /// everything stopped by PID afterwards whatever happens.
    private func onMutter(_ body: (PrivateMutter, X11Painter, MutterScreenCast) async throws -> Void) async throws {
        let mutter = try await PrivateMutter.start(width: 640, height: 480)
        try await withTearDown {
            let painter = try X11Painter(display: mutter.xDisplay, authority: mutter.xAuthority, window: true)
            painter.paintTestCard()
            let cast = try await MutterScreenCast.recordMonitor(mutter.monitor, onBus: mutter.bus.address)
            try await withTearDown { try await body(mutter, painter, cast) } tearDown: { await cast.stop() }
        } tearDown: {
            await mutter.stop()
        }
        for pid in mutter.pids { #expect(kill(pid, 0) != 0, "process \(pid) is gone") }
        #expect(!FileManager.default.fileExists(atPath: mutter.directory.path), "the private runtime directory is removed")
    }

    /// The picture an I420 capture of the test card should give at `width` x `height`.
    private func expectedTestCard(width: Int, height: Int) -> [UInt8] {
        let screen = X11Painter.render(X11Painter.testCard(width: 640, height: 480), width: 640, height: 480)
        let scaler = RGB32ToI420Scaler(sourceWidth: 640, sourceHeight: 480, width: width, height: height)
        var frame = [UInt8](repeating: 0, count: scaler.frameBytes)
        screen.withUnsafeBytes { source in frame.withUnsafeMutableBytes { scaler.convert(source, into: $0) } }
        return frame
    }

    private func psnr(_ a: [UInt8], _ b: [UInt8]) -> Double {
        var squared = 0.0
        for i in 0..<min(a.count, b.count) { let d = Double(a[i]) - Double(b[i]); squared += d * d }
        return 10 * log10(255 * 255 / max(squared / Double(max(min(a.count, b.count), 1)), 1e-9))
    }

    @Test func theTestCardArrivesAtTheAskedRateAndStoppingLeavesTheGraph() async throws {
        try await onMutter { mutter, painter, cast in
            let name = "mediaroute-test-\(UUID().uuidString.prefix(8))"
            let stream = try PipeWireScreenStream(remote: try mutter.connectToPipeWire(), node: cast.node, name: name)
            try await stream.waitForFirstFrame(within: .seconds(30))
            #expect(stream.size?.width == 640 && stream.size?.height == 480, "\(String(describing: stream.size))")
            let names = try await mutter.pipeWireNodeNames()
            #expect(names.contains(name), "our stream is a node in PipeWire's graph while it runs")
            // The isolated configuration's graph: its driver, mutter's screencast and our stream, no
            // device of the machine's (sound card, camera, Bluetooth) nor the stock Freewheel-Driver.
            #expect(Set(names) == ["Dummy-Driver", "mutter", name], "\(names)")

            let capture = try ScreenCaptureSession(screenCast: stream, settings: .init(width: 320, height: 240, frameRate: 20))
            #expect((capture.screenWidth, capture.screenHeight, capture.width, capture.height) == (640, 480, 320, 240))
            let frames = Mutex<[(picture: [UInt8], stamp: UInt64)]>([])
            try capture.start { bytes, stamp in
                let count = frames.withLock { $0.append((Array(bytes), stamp)); return $0.count }
                return count < 41 ? .next : .end
            }
            // The capture ends by itself: after the 41st frame, or early when the stream fails.
            let deadline = ContinuousClock.now + .seconds(60)
            while capture.isCapturing && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
            let taken = frames.withLock { Array($0.prefix(41)) }
            try #require(taken.count == 41, "41 frames within 60 s; the capture ended: \(capture.statistics.ended ?? "not yet")\n\(mutter.logs)")
            let expected = expectedTestCard(width: 320, height: 240)
            let worst = taken.map { psnr($0.picture, expected) }.min() ?? 0
            #expect(worst >= 30, "every frame is the test card: worst PSNR \(worst) dB")
            // The compositor sends a frame only when the screen changes: the screen stood still, so
            // the session repeated the last one at every tick.
            #expect(stream.framesReceived < 41, "frames from mutter: \(stream.framesReceived)")
            let pace = TickPace(stamps: taken.map(\.stamp), period: 50_000_000)
            #expect(pace.ticks == pace.ticks.sorted(), "the stamps go forwards: \(pace.ticks)")
            // A tick missed on a busy machine is skipped, and a late one is grabbed late: a few of each.
            #expect(pace.skipped <= 8 && pace.late.count <= 8, "41 frames at 20 fps: \(pace), \(capture.statistics)")
            #expect(capture.statistics.late <= 8, "\(capture.statistics)")
            capture.stop()
            #expect(!capture.isCapturing)
            #expect(stream.ended == "the screencast stream was closed")
            #expect(try await !mutter.pipeWireNodeNames().contains(name), "our node has left PipeWire's graph once stopped")
        }
    }

    @Test func aChangeOnTheScreenComesThrough() async throws {
        try await onMutter { mutter, painter, cast in
            let stream = try PipeWireScreenStream(remote: try mutter.connectToPipeWire(), node: cast.node)
            try await stream.waitForFirstFrame(within: .seconds(30))
            let capture = try ScreenCaptureSession(screenCast: stream, settings: .init(width: 320, height: 240, frameRate: 30))
            let latest = Mutex<[UInt8]>([])
            try capture.start { bytes, _ in latest.withLock { $0 = Array(bytes) }; return .next }
            let before = stream.framesReceived
            painter.fill(0xC00000)  // the whole screen red: BT.601 Y 65, V 212
            let deadline = ContinuousClock.now + .seconds(15)
            var red = false
            while !red && ContinuousClock.now < deadline {
                red = latest.withLock { $0.count == 320 * 240 * 3 / 2 && abs(Int($0[120 * 320 + 160]) - 65) <= 1 && Int($0[320 * 240 + 160 * 120 + 60 * 160 + 80]) > 200 }
                if !red { try await Task.sleep(for: .milliseconds(20)) }
            }
            capture.stop()
            #expect(red, "the red screen came through within 15 s")
            #expect(stream.framesReceived > before, "mutter sent a frame for the change")
        }
    }

    @Test func aScreencastStoppedByTheCompositorEndsTheCaptureWithASentence() async throws {
        try await onMutter { mutter, painter, cast in
            let stream = try PipeWireScreenStream(remote: try mutter.connectToPipeWire(), node: cast.node)
            try await stream.waitForFirstFrame(within: .seconds(30))
            let capture = try ScreenCaptureSession(screenCast: stream, settings: .init(width: 320, height: 240, frameRate: 30))
            try capture.start { _, _ in .next }
            await cast.stop()  // as a desktop ends a screencast (its "stop sharing" button), or the compositor quits
            let deadline = ContinuousClock.now + .seconds(15)
            while capture.isCapturing && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
            #expect(!capture.isCapturing, "the capture ended by itself")
            let ended = capture.statistics.ended ?? ""
            #expect(ended.contains("screencast stream"), "\(ended)")
            capture.stop()
        }
    }
}
