import Foundation
import PrivateDaemons
import ScreenCapture
import Synchronization
import Testing

/// The X11 screen grabbed through MIT-SHM on a private Xvfb of the test's own, with a picture the
/// test paints itself.
@Suite("Screen capture on a private X server", .serialized, .timeLimit(.minutes(1)))
struct ScreenCaptureTests {
    /// A fresh Xvfb for `body`, stopped by PID afterwards whatever happens.
    private func onXServer(width: Int = 640, height: Int = 480, _ body: (PrivateXServer) async throws -> Void) async throws {
        let server = try await PrivateXServer.start(width: width, height: height)
        try await withTearDown { try await body(server) } tearDown: { await server.stopFromTask() }
    }

    /// The X server's open sockets: one per connected client, plus its listening ones.
    private func sockets(of pid: Int32) throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").filter {
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)"))?.hasPrefix("socket:") ?? false
        }.count
    }

    @Test func theTestCardComesOutInItsColoursScaledToHalfSize() async throws {
        try await onXServer { server in
            let painter = try X11Painter(display: server.display)
            painter.paintTestCard()
            let capture = try ScreenCaptureSession(.init(display: server.display, width: 320, height: 240, frameRate: 30))
            #expect((capture.screenWidth, capture.screenHeight, capture.width, capture.height) == (640, 480, 320, 240))
            let frame = Mutex<[UInt8]?>(nil)
            let (frames, gotOne) = AsyncStream.makeStream(of: Void.self)
            try capture.start { bytes, _ in
                frame.withLock { $0 = Array(bytes) }
                gotOne.yield()
                return .end
            }
            for await _ in frames { break }
            capture.stop()
            let picture = try #require(frame.withLock { $0 })
            #expect(picture.count == 320 * 240 * 3 / 2)
            // BT.601 limited range: white bar (0xC0C0C0) Y = 181, red bar (0xC00000) Y = 65, black-ish last bar Y = 30.
            func luma(_ x: Int, _ y: Int) -> Int { Int(picture[y * 320 + x]) }
            #expect(abs(luma(20, 60) - 181) <= 1, "\(luma(20, 60))")
            #expect(abs(luma(5 * 40 + 20, 60) - 65) <= 1, "\(luma(220, 60))")
            #expect(abs(luma(7 * 40 + 20, 60) - 30) <= 1, "\(luma(300, 60))")
            // The red bar's chroma: V well above neutral, U below.
            let (u, v) = (Int(picture[320 * 240 + 30 * 160 + 110]), Int(picture[320 * 240 + 160 * 120 + 30 * 160 + 110]))
            #expect(v > 200 && u < 110, "U \(u) V \(v)")
            // The grey ramp rises left to right.
            #expect(luma(10, 150) < luma(160, 150) && luma(160, 150) < luma(310, 150))
        }
    }

    @Test func framesComeAtTheAskedRate() async throws {
        try await onXServer { server in
            let capture = try ScreenCaptureSession(.init(display: server.display, width: 320, height: 240, frameRate: 20))
            let stamps = Mutex<[UInt64]>([])
            let (done, finish) = AsyncStream.makeStream(of: Void.self)
            try capture.start { _, stamp in
                let count = stamps.withLock { $0.append(stamp); return $0.count }
                if count == 41 { finish.yield() }
                return .next
            }
            for await _ in done { break }
            capture.stop()
            let times = stamps.withLock { Array($0.prefix(41)) }
            // 40 intervals of 50 ms: 2 s, within one frame; a tick missed on a busy machine is skipped (50 ms more), not caught up.
            let span = Double(times[40] - times[0]) / 1e9
            let late = capture.statistics.late
            // A busy machine (the whole suite beside it) may miss a few ticks, not most.
            #expect(late <= 8, "\(capture.statistics)")
            #expect(abs(span - 2.0 - Double(late) * 0.05) < 0.05, "40 frames at 20 fps took \(span) s, \(late) ticks late")
        }
    }

    @Test func stoppingClosesTheConnectionToTheDisplay() async throws {
        try await onXServer { server in
            let before = try sockets(of: server.pid)
            let capture = try ScreenCaptureSession(.init(display: server.display, frameRate: 30))
            #expect((capture.width, capture.height) == (640, 480), "the screen's own size when none is asked")
            #expect(try sockets(of: server.pid) == before + 1, "the capture's connection")
            let delivered = Atomic<Int>(0)
            try capture.start { _, _ in delivered.add(1, ordering: .relaxed); return .next }
            #expect(capture.isCapturing)
            capture.stop()
            #expect(!capture.isCapturing)
            let after = delivered.load(ordering: .relaxed)
            #expect(capture.statistics.frames == after)
            // The server has seen the connection go: its socket is closed on the server's side too.
            // (The server notices a closed client within its next dispatch; ask it something to be sure.)
            let painter = try X11Painter(display: server.display)
            painter.sync()
            #expect(try sockets(of: server.pid) == before + 1, "only the painter is connected now")
            #expect(delivered.load(ordering: .relaxed) == after, "no frame after stop")
            #expect(throws: ScreenCaptureError.self) { try capture.start { _, _ in .next } }
        }
    }

    @Test func noDisplayIsSaidInASentence() throws {
        #expect(throws: ScreenCaptureError.self) { try ScreenCaptureSession(.init(display: ":4242")) }
        do {
            _ = try ScreenCaptureSession(.init(display: ":4242"))
        } catch {
            #expect(error.description == "cannot connect to the X display :4242 (is an X server running there, and may this user connect?)")
        }
    }
}
