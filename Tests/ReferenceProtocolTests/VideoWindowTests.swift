@testable import AVSystemRouting
import Foundation
import MediaRouteIPC
import PrivateDaemons
import ScreenMirroring
import Synchronization
import Testing
import TestSupport

/// `--video-output`: a real-time video stream shown in a window on the receiver's display. An app
/// mirrors a private Xvfb with a known picture to a receiver whose display is a second private
/// Xvfb; the window ffplay opens there is found in the X window list by its title, grabbed through
/// MIT-SHM, and compared with the picture sent.
@Suite("Reference protocol: video to a window", .serialized, .timeLimit(.minutes(3)))
struct VideoWindowTests {
    private func frame(of display: String, x: Int = 0, y: Int = 0, region: (width: Int, height: Int)? = nil, width: Int, height: Int) throws -> Data {
        try ScreenPicture.frame(of: display, x: x, y: y, region: region, width: width, height: height)
    }

    /// The receiver's window for stream `stream`, if it is on `display`.
    private func window(_ stream: String, on display: String) -> X11WindowList.Window? {
        (try? X11WindowList.windows(on: display))?.first { $0.title.hasPrefix("Den TV: \(stream) from ") }
    }

    /// The ffplay PID the receiver printed for the newest window it opened (after `mark`).
    private func windowPID(_ receiver: ReceiverProcess, after mark: Int = 0) async throws -> Int32 {
        try await receiver.printedPID(after: "shown in a window (ffplay pid ", since: mark)
    }


    /// An app's route to the receiver "Den TV".
    private func route(_ bed: ReferenceTestBed) async throws -> AVSystemRoute {
        let app = bed.app()
        let observer = AppObserver()
        #expect(app.addObserver(observer))
        _ = try await bed.activate("Den TV") { _ in nil }
        try await bed.harness.waitUntil("app has the route") { await MainActor.run { observer.route != nil } }
        return try #require(await MainActor.run { observer.route })
    }

    private func mirror(_ source: PrivateXServer, over route: AVSystemRoute) async throws -> ScreenMirroring {
        try await route.startScreenMirroring(.init(display: source.display, width: 320, height: 240, frameRate: 30))
    }

    /// Runs `body` with two private X servers, stopped after it: the screen an app mirrors
    /// (`sourceWidth`x`sourceHeight`) and the receiver's display (640x480).
    private func withScreens(sourceWidth: Int = 640, sourceHeight: Int = 480,
                             _ body: (_ source: PrivateXServer, _ screen: PrivateXServer) async throws -> Void) async throws {
        let source = try await PrivateXServer.start(width: sourceWidth, height: sourceHeight)
        let screen: PrivateXServer
        do {
            screen = try await PrivateXServer.start(width: 640, height: 480)
        } catch {
            await source.stopFromTask()
            throw error
        }
        try await withTearDown { try await body(source, screen) } tearDown: {
            await screen.stopFromTask()
            await source.stopFromTask()
        }
    }

    /// Polls until the window of `stream` on `screen` (320x240) shows `sent` at 30 dB PSNR or better,
    /// or 30 s pass; returns the best PSNR seen.
    private func waitForPicture(_ sent: Data, in stream: String, on screen: PrivateXServer) async throws -> Double {
        var best = 0.0
        try await waitUntil("the window of \(stream) shows the picture sent at 30 dB or better", seconds: 30) {
            guard let found = window(stream, on: screen.display), found.width == 320, found.height == 240,
                  found.x + 320 <= screen.width, found.y + 240 <= screen.height,
                  let seen = try? frame(of: screen.display, x: found.x, y: found.y, region: (320, 240), width: 320, height: 240) else { return false }
            best = max(best, StreamingTests.psnr(seen, sent))
            return best >= 30
        }
        return best
    }

    @Test func aMirroredScreenShowsInAWindowThatClosesWithTheStream() async throws {
        try await withScreens { source, screen in
            try X11Painter(display: source.display).paintTestCard()
            let sent = try frame(of: source.display, width: 320, height: 240)
            try await ReferenceTestBed.run { bed in
                // auto: a window, as there is a display.
                let receiver = try await bed.listedReceiver(arguments: ["--auth", "none"], environment: ["DISPLAY": screen.display])
                try await receiver.waitFor("video to a window per stream (")
                #expect(try X11WindowList.windows(on: screen.display).isEmpty, "no window before a stream")
                let route = try await route(bed)
                let mirroring = try await mirror(source, over: route)
                let pid = try await windowPID(receiver)

                // Polled: the first frames may still be decoding.
                let best = try await waitForPicture(sent, in: "r1", on: screen)
                #expect(best >= 30, "PSNR \(best) dB")
                try await receiver.statusShows("stream r1: video 320x240 at 30 fps")
                #expect(receiver.output.contains("shown in a window (ffplay pid \(pid))"), "\(receiver.output)")

                try await mirroring.stop()
                try await receiver.waitFor("stream r1 ended: ")
                try await waitUntil("the window and its ffplay are gone") { window("r1", on: screen.display) == nil && processHasEnded(pid, parent: receiver.process.pid) }
                #expect(!receiver.output.contains("its window went away"), "the window closed with the stream, it did not go away before it: \(receiver.output)")

                // A receiver that stops closes its windows.
                let mark = receiver.console.mark
                let again = try await mirror(source, over: route)
                let second = try await windowPID(receiver, after: mark)
                try await waitUntil("the second window is there") { (try? X11WindowList.windows(on: screen.display).count) == 1 }
                await receiver.stop()
                try await waitUntil("the receiver's windows are gone with it") { (try? X11WindowList.windows(on: screen.display).isEmpty) == true && processHasEnded(second, parent: receiver.process.pid) }
                try? await again.stop()
            }
        }
    }

    @Test func aWindowThatGoesAwayLeavesTheStreamAndItsRecording() async throws {
        try await withScreens(sourceWidth: 320, sourceHeight: 240) { source, screen in
            try X11Painter(display: source.display).paintTestCard()
            try await ReferenceTestBed.run { bed in
                let record = bed.harness.root + "/recordings"
                let receiver = try await bed.listedReceiver(arguments: ["--auth", "none", "--video-output", "window", "--record", record],
                                                            environment: ["DISPLAY": screen.display])
                let route = try await route(bed)
                let mirroring = try await mirror(source, over: route)
                let pid = try await windowPID(receiver)
                try await waitUntil("the window is there") { window("r1", on: screen.display) != nil }

                // Its ffplay is killed mid-stream: said, and the stream and recording go on.
                #expect(kill(pid, SIGKILL) == 0)
                try await receiver.waitFor("stream r1: its window went away (ffplay killed by signal 9 (Killed)); the stream goes on without it")
                let recorded = { (try? FileManager.default.attributesOfItem(atPath: record + "/r1.h264")[.size] as? Int) ?? 0 }
                let atKill = recorded()
                try await waitUntil("the recording grows after the window went away") { recorded() > atKill + 1000 }
                try await receiver.statusShows("its window went away (ffplay killed by signal 9")
                #expect(receiver.process.exitIfEnded() == nil, "the receiver runs on")
                #expect(window("r1", on: screen.display) == nil)

                // The next stream has a window again; a person closes it (the close button's message).
                try await mirroring.stop()
                try await receiver.waitFor("stream r1 ended: ")
                #expect(receiver.output.contains("recorded to \(record)/r1.h264, its window went away (ffplay killed by signal 9"), "\(receiver.output)")
                let mark = receiver.console.mark
                let again = try await mirror(source, over: route)
                let second = try await windowPID(receiver, after: mark)
                let name = try #require(receiver.console.lastLine(startingWith: "stream ", after: mark)?.split(separator: " ").dropFirst().first.map(String.init))
                var shown: X11WindowList.Window?
                try await waitUntil("the second window is there") {
                    shown = window(name, on: screen.display)
                    return shown != nil
                }
                try X11WindowList.askToClose(try #require(shown), on: screen.display)
                try await receiver.waitFor("stream \(name): its window went away (ffplay exited: the window was closed); the stream goes on without it", after: mark)
                try await waitUntil("the closed window's ffplay is gone") { processHasEnded(second, parent: receiver.process.pid) && window(name, on: screen.display) == nil }
                try await again.stop()
                try await receiver.waitFor("stream \(name) ended: ", after: mark)
                #expect(receiver.process.exitIfEnded() == nil, "the receiver runs on")
            }
        }
    }

    @Test func aStalledWindowNeverHoldsUpTheStreamAndCatchesUpAfter() async throws {
        try await withScreens(sourceWidth: 320, sourceHeight: 240) { source, screen in
            let noise = try NoisePainter(display: source.display)
            defer { noise.stop() }
            try await ReferenceTestBed.run { bed in
                let record = bed.harness.root + "/recordings"
                let receiver = try await bed.listedReceiver(arguments: ["--auth", "none", "--video-output", "window", "--record", record],
                                                            environment: ["DISPLAY": screen.display])
                let mirroring = try await mirror(source, over: try await route(bed))
                let pid = try await windowPID(receiver)
                try await waitUntil("the window is there") { window("r1", on: screen.display) != nil }

                // ffplay stops reading (a hung decoder): its pipe and the receiver's bounded queue
                // fill, then what waits is dropped and counted; the receiver's loop never waits.
                #expect(kill(pid, SIGSTOP) == 0)
                try await receiver.waitFor("stream r1: its window fell 1024 KiB behind: dropped ", seconds: 30)
                let recorded = { (try? FileManager.default.attributesOfItem(atPath: record + "/r1.h264")[.size] as? Int) ?? 0 }
                let atStall = recorded()
                try await waitUntil("the recording grows while the window is stalled") { recorded() > atStall + 100_000 }
                try await receiver.statusShows("bytes dropped while the window lagged (")
                #expect(!receiver.output.contains("its window went away"), "\(receiver.output)")

                // It reads again: it catches up and shows the (now still) picture.
                noise.stop()
                let painter = try X11Painter(display: source.display)
                painter.paintTestCard()
                let sent = try frame(of: source.display, width: 320, height: 240)
                #expect(kill(pid, SIGCONT) == 0)
                let best = try await waitForPicture(sent, in: "r1", on: screen)
                #expect(best >= 30, "PSNR \(best) dB")

                // A receiver that is killed (no chance to close anything) takes its window with it.
                await receiver.kill9()
                try await waitUntil("the killed receiver's window is gone") { window("r1", on: screen.display) == nil && processHasEnded(pid, parent: receiver.process.pid) }
                try? await mirroring.stop()
            }
        }
    }

    @Test func aWindowWithoutADisplayIsRefusedAtStartAndABadValueIsNamed() async throws {
        let root = NSTemporaryDirectory() + "mediaroute-video-\(getpid())-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let environment = ProcessInfo.processInfo.environment.merging(ReceiverProcess.noDisplay) { _, new in new }.map { "\($0.key)=\($0.value)" }
        let refused = try await ChildOutput.run(DaemonHarness.binary("mediaroute-receiver"), ["--name", "Dark TV", "--state-dir", root, "--video-output", "window"],
                                                environment: environment, timeout: .seconds(20))
        #expect(refused.termination == .exited(1), "\(refused.termination)")
        #expect(refused.standardError.contains("--video-output window needs a display: neither DISPLAY nor WAYLAND_DISPLAY is set"), "\(refused.standardError)")
        let unknown = try await ChildOutput.run(DaemonHarness.binary("mediaroute-receiver"), ["--name", "Dark TV", "--state-dir", root, "--video-output", "tv"],
                                                environment: environment, timeout: .seconds(20))
        #expect(unknown.termination == .exited(64), "\(unknown.termination)")
        #expect(unknown.standardError.contains("--video-output must be one of auto, window, none, not \"tv\""), "\(unknown.standardError)")
    }

    @Test func autoWithoutADisplayShowsNothingAndSaysWhy() async throws {
        try await ReferenceTestBed.run { bed in
            let receiver = try await bed.listedReceiver(arguments: ["--auth", "none"])
            #expect(receiver.output.contains("video to none (neither DISPLAY nor WAYLAND_DISPLAY is set"), "\(receiver.output)")
            try await receiver.statusShows(", video to none")
        }
    }
}

/// Paints lines of random colours over a display 30 times a second until stopped, on a thread of
/// its own: a picture that changes every frame and encodes large.
private final class NoisePainter: Sendable {
    private let running = Atomic<Bool>(true)
    private let ended = DispatchSemaphore(value: 0)

    init(display: String) throws {
        let painter = try X11Painter(display: display)
        Thread.detachNewThread { [self] in
            defer { ended.signal() }
            var next = ContinuousClock.now
            while running.load(ordering: .relaxed) {
                // Paced like a screen, not as fast as it can (the suite's other tests run beside it).
                next += .milliseconds(33)
                Thread.sleep(forTimeInterval: max(0, (next - ContinuousClock.now) / .seconds(1)))
                // Columns a pixel wide, crossed by every third row: detail no encoder can make small.
                let columns = (0..<painter.width).map { X11Painter.Rectangle(x: $0, y: 0, width: 1, height: painter.height, colour: UInt32.random(in: 0...0xFFFFFF)) }
                let rows = stride(from: 0, to: painter.height, by: 3).map { X11Painter.Rectangle(x: 0, y: $0, width: painter.width, height: 1, colour: UInt32.random(in: 0...0xFFFFFF)) }
                painter.paint(columns + rows)
            }
        }
    }

    /// Stops painting; returns once the thread has. Safe to call twice.
    func stop() {
        guard running.exchange(false, ordering: .relaxed) else { return }
        ended.wait()
    }
}
