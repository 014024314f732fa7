import Foundation
import MediaCodecs
import MediaDevice
import MediaRouteIPC
@testable import MediaRouteSupervisor
import PrivateDaemons
import Testing
import TestSupport

/// `--video-output` for URL playback: a video file served over HTTP shows its picture in a window
/// on the receiver's display (a private Xvfb), found in the X window list by its title and grabbed
/// through MIT-SHM. The file, made by ffmpeg's lavfi sources, is SMPTE bars (a known still picture)
/// with a moving test pattern inset in the lower right corner (which shows whether frames still
/// change), and a 440 Hz tone.
@Suite("Reference receiver: a URL's picture in a window", .serialized, .timeLimit(.minutes(3)))
struct URLVideoWindowTests {
    static let width = 320, height = 240
    /// The moving inset: 64x48 at the lower right corner; the bars above row `barsHeight` never change.
    static let inset = (x: 256, y: 192, width: 64, height: 48)
    static let barsHeight = 176

    /// Writes `seconds` of the test card with its tone to `path` (MP4, its index first, H.264 and
    /// AAC), titled "Test Card". A keyframe every second: the test server (Python's) takes no byte
    /// ranges, so a seek (a resume is one too) must go forward, to a keyframe after the position.
    static func makeTestCard(at path: String, seconds: Int) async throws {
        let output = try await ChildOutput.run("/usr/bin/ffmpeg", [
            "-hide_banner", "-loglevel", "error", "-y",
            "-f", "lavfi", "-i", "smptebars=size=\(width)x\(height):rate=25:duration=\(seconds)",
            "-f", "lavfi", "-i", "testsrc2=size=\(inset.width)x\(inset.height):rate=25:duration=\(seconds)",
            "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=\(seconds)",
            "-filter_complex", "[0:v][1:v]overlay=x=\(inset.x):y=\(inset.y)[v]", "-map", "[v]", "-map", "2:a",
            "-c:v", "libx264", "-preset", "ultrafast", "-crf", "12", "-g", "25", "-pix_fmt", "yuv420p", "-c:a", "aac", "-ac", "2", "-movflags", "+faststart",
            "-metadata", "title=Test Card", path], timeout: .seconds(60))
        guard output.termination == .exited(0) else { throw TestTimeout(what: "ffmpeg could not make \(path): \(output.standardError)") }
    }

    /// The bars (the card above the inset) as an I420 frame, as ffmpeg draws them.
    static func bars(in directory: String) async throws -> Data {
        let path = directory + "/bars.bgrx"
        let output = try await ChildOutput.run("/usr/bin/ffmpeg", ["-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "smptebars=size=\(width)x\(height)",
                                                                  "-frames:v", "1", "-vf", "crop=\(width):\(barsHeight):0:0", "-pix_fmt", "bgr0", "-f", "rawvideo", path],
                                               timeout: .seconds(30))
        guard output.termination == .exited(0) else { throw TestTimeout(what: "ffmpeg could not draw the bars: \(output.standardError)") }
        let pixels = try Data(contentsOf: URL(fileURLWithPath: path))
        return ScreenPicture.i420(pixels, sourceWidth: width, sourceHeight: barsHeight, width: width, height: barsHeight)
    }

    /// The receiver's window for the test card, if it is on `display`.
    static func window(on display: String) -> X11WindowList.Window? {
        (try? X11WindowList.windows(on: display))?.first { $0.title.hasPrefix("Den TV: Test Card from ") }
    }

    /// The ffplay PID the receiver printed for the newest URL window it opened (after `mark`).
    static func windowPID(_ receiver: ReceiverProcess, after mark: Int = 0) async throws -> Int32 {
        try await receiver.printedPID(after: "its picture shown in a window (ffplay pid ", since: mark)
    }

    /// Plays `file` on "Den TV" to its end; returns the most windows `screen` had meanwhile.
    static func mostWindows(playing file: String, on screen: PrivateXServer, _ bed: ReferenceTestBed) async throws -> Int {
        _ = try await bed.supervisor.startSession("Den TV", url: bed.media.url(file))
        var windows = 0
        try await bed.harness.waitUntil("\(file) played to the end", seconds: 30) {
            windows = max(windows, (try? X11WindowList.windows(on: screen.display).count) ?? 0)
            return await bed.playback("Den TV")?.state == .ended
        }
        return windows
    }

    /// The inset's pixels in `window`, if it can be grabbed whole.
    static func inset(of window: X11WindowList.Window, on screen: PrivateXServer) -> Data? {
        guard window.width == width, window.height == height, window.x + width <= screen.width, window.y + height <= screen.height else { return nil }
        return try? ScreenPicture.pixels(of: screen.display, x: window.x + inset.x, y: window.y + inset.y, region: (inset.width, inset.height)).pixels
    }

    /// Runs `body` with a private X server (640x480), the receiver's display, stopped after it.
    static func withScreen(_ body: (PrivateXServer) async throws -> Void) async throws {
        let screen = try await PrivateXServer.start(width: 640, height: 480)
        try await withTearDown { try await body(screen) } tearDown: { await screen.stopFromTask() }
    }

    /// A test bed with the test card (`seconds` long) served as card.mp4.
    static func withCard(seconds: Int, _ body: (ReferenceTestBed) async throws -> Void) async throws {
        try await ReferenceTestBed.run { bed in
            try await makeTestCard(at: bed.harness.root + "/media/card.mp4", seconds: seconds)
            try await body(bed)
        }
    }

    @Test func thePictureShowsInAWindowThatPausesSeeksAndClosesAtTheEnd() async throws {
        try await Self.withScreen { screen in
            try await Self.withCard(seconds: 12) { bed in
                let bars = try await Self.bars(in: bed.harness.root)
                let receiver = try await bed.listedReceiver(arguments: ["--auth", "none", "--video-output", "window"], environment: ["DISPLAY": screen.display])
                try await bed.activate("Den TV") { _ in nil }
                #expect(try X11WindowList.windows(on: screen.display).isEmpty, "no window before playback")
                _ = try await bed.supervisor.startSession("Den TV", url: bed.media.url("card.mp4"))
                let pid = try await Self.windowPID(receiver)

                // The bars, seen in the window (polled: the first frames may still be decoding).
                var best = 0.0
                var shown: X11WindowList.Window?
                try await waitUntil("the window shows the bars at 30 dB or better", seconds: 30) {
                    guard let found = Self.window(on: screen.display), Self.inset(of: found, on: screen) != nil,
                          let seen = try? ScreenPicture.frame(of: screen.display, x: found.x, y: found.y, region: (Self.width, Self.barsHeight),
                                                              width: Self.width, height: Self.barsHeight) else { return false }
                    shown = found
                    best = max(best, StreamingTests.psnr(seen, bars))
                    return best >= 30
                }
                print("URL picture in a window: PSNR \(String(format: "%.1f", best)) dB")
                #expect(best >= 30, "PSNR \(best) dB")
                let window = try #require(shown)
                try await receiver.statusShows("picture 320x240 at 25 fps, shown in a window (ffplay pid \(pid))")

                // Playing, the inset moves.
                let first = Self.inset(of: window, on: screen)
                try await waitUntil("the inset moves while playing") { Self.inset(of: window, on: screen).map { $0 != first } ?? false }

                // Paused: the same window, its frame still.
                _ = try await bed.supervisor.setPlayback("Den TV", PlaybackChanges(isPlaying: false))
                try await bed.harness.waitUntil("paused") { await bed.playback("Den TV")?.state == .paused }
                var still: (pixels: Data, since: ContinuousClock.Instant)?
                try await waitUntil("the paused window's frame stays the same for 0.6 s", seconds: 15) {
                    guard let now = Self.inset(of: window, on: screen) else { return false }
                    if still?.pixels != now { still = (now, .now) }
                    return ContinuousClock.now - still!.since >= .milliseconds(600)
                }
                #expect(Self.window(on: screen.display)?.id == window.id, "the window stays through a pause")
                #expect(!processHasEnded(pid, parent: receiver.process.pid))

                // A seek ahead to the second keyframe after the pause, playing: the same window moves again.
                let paused = try #require(await bed.playback("Den TV")?.position)
                try #require(paused < 9, "paused at \(paused) s, too near the end to seek ahead")
                _ = try await bed.supervisor.setPlayback("Den TV", PlaybackChanges(position: paused.rounded(.down) + 2, isPlaying: true))
                try await waitUntil("the inset moves after the seek") { Self.inset(of: window, on: screen).map { $0 != still?.pixels } ?? false }
                #expect(Self.window(on: screen.display)?.id == window.id, "the window stays through a seek: \(receiver.output)")

                // The end of the media closes it.
                try await bed.harness.waitUntil("played to the end", seconds: 30) { await bed.playback("Den TV")?.state == .ended }
                try await waitUntil("the window and its ffplay are gone at the end") { Self.window(on: screen.display) == nil && processHasEnded(pid, parent: receiver.process.pid) }
                #expect(!receiver.output.contains("its window went away"), "the window closed with the playback: \(receiver.output)")
            }
        }
    }

    @Test func stopAndAStoppingReceiverCloseTheWindowAndSoundAloneOpensNone() async throws {
        try await Self.withScreen { screen in
            try await Self.withCard(seconds: 20) { bed in
                let receiver = try await bed.listedReceiver(arguments: ["--auth", "none", "--video-output", "window"], environment: ["DISPLAY": screen.display])
                try await bed.activate("Den TV") { _ in nil }
                _ = try await bed.supervisor.startSession("Den TV", url: bed.media.url("card.mp4"))
                let pid = try await Self.windowPID(receiver)
                try await waitUntil("the window is there") { Self.window(on: screen.display) != nil }
                try await bed.supervisor.stopSession("Den TV")
                try await waitUntil("the window and its ffplay are gone with the stop") { Self.window(on: screen.display) == nil && processHasEnded(pid, parent: receiver.process.pid) }

                // tone.wav has no picture: it plays to its end, and no window opens meanwhile.
                let mark = receiver.console.mark
                let windows = try await Self.mostWindows(playing: "tone.wav", on: screen, bed)
                #expect(windows == 0, "no window for a URL without a picture")
                #expect(!receiver.console.output(after: mark).contains("its picture"), "\(receiver.console.output(after: mark))")

                // A receiver that stops closes the window of what it plays.
                let again = receiver.console.mark
                _ = try await bed.supervisor.startSession("Den TV", url: bed.media.url("card.mp4"))
                let second = try await Self.windowPID(receiver, after: again)
                try await waitUntil("the window is there again") { Self.window(on: screen.display) != nil }
                await receiver.stop()
                try await waitUntil("the window and its ffplay are gone with the receiver") { Self.window(on: screen.display) == nil && processHasEnded(second, parent: receiver.process.pid) }
            }
        }
    }

    @Test func videoOutputNoneOpensNoWindow() async throws {
        try await Self.withScreen { screen in
            try await Self.withCard(seconds: 3) { bed in
                let receiver = try await bed.listedReceiver(arguments: ["--auth", "none", "--video-output", "none"], environment: ["DISPLAY": screen.display])
                try await bed.activate("Den TV") { _ in nil }
                let windows = try await Self.mostWindows(playing: "card.mp4", on: screen, bed)
                #expect(windows == 0, "no window with --video-output none")
                #expect(receiver.output.contains("reached the end"), "\(receiver.output)")
                #expect(!receiver.output.contains("its picture"), "\(receiver.output)")
            }
        }
    }

    @Test func aWindowClosedByAPersonLeavesTheSoundPlaying() async throws {
        let pulse = try await PrivatePulseAudio()
        try await withTearDown {
            try await Self.withScreen { screen in
                try await Self.withCard(seconds: 6) { bed in
                    let recording = try await pulse.record(to: bed.harness.root + "/heard.wav")
                    let receiver = try await bed.listedReceiver(arguments: ["--auth", "none", "--video-output", "window", "--audio-output", "pulse"],
                                                                environment: pulse.environment.merging(["DISPLAY": screen.display]) { _, new in new })
                    try await bed.activate("Den TV") { _ in nil }
                    _ = try await bed.supervisor.startSession("Den TV", url: bed.media.url("card.mp4"))
                    let pid = try await Self.windowPID(receiver)
                    var shown: X11WindowList.Window?
                    try await waitUntil("the window is there") {
                        shown = Self.window(on: screen.display)
                        return shown != nil
                    }
                    try X11WindowList.askToClose(try #require(shown), on: screen.display)
                    try await receiver.waitFor(": its window went away (ffplay exited: the window was closed); the sound goes on without it")
                    try await waitUntil("the closed window's ffplay is gone") { processHasEnded(pid, parent: receiver.process.pid) && Self.window(on: screen.display) == nil }
                    try await receiver.statusShows("its window went away (ffplay exited: the window was closed)")
                    try await bed.harness.waitUntil("played to the end", seconds: 30) { await bed.playback("Den TV")?.state == .ended }
                    await pulse.finish(recording)

                    // The whole tone was heard, without a gap where the window closed.
                    let heard = try HeardTone(wav: bed.harness.root + "/heard.wav")
                    print("URL with its window closed, on PulseAudio: \(heard)")
                    #expect(abs(heard.frequency - 440) < 1, "\(heard)")
                    #expect(abs(heard.seconds - 6) < 0.3, "\(heard)")
                    #expect(heard.longestGap <= 10, "\(heard)")
                }
            }
        } tearDown: {
            await pulse.stop()
        }
    }

    /// Writes `seconds` of black with a white flash and a 1 kHz beep together for 0.2 s from every
    /// odd second (1, 3, 5...), to `path` (MP4 as the test card).
    static func makeFlashes(at path: String, seconds: Int) async throws {
        let flashing = "between(mod(t,2),1,1.19)"
        let output = try await ChildOutput.run("/usr/bin/ffmpeg", [
            "-hide_banner", "-loglevel", "error", "-y",
            "-f", "lavfi", "-i", "color=c=black:size=\(width)x\(height):rate=25:duration=\(seconds),drawbox=color=white:t=fill:enable='\(flashing)'",
            "-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=48000:duration=\(seconds),volume=volume=0:enable='not(\(flashing))'",
            "-c:v", "libx264", "-preset", "ultrafast", "-crf", "12", "-g", "25", "-pix_fmt", "yuv420p", "-c:a", "aac", "-ac", "2", "-movflags", "+faststart",
            "-metadata", "title=Test Card", path], timeout: .seconds(60))
        guard output.termination == .exited(0) else { throw TestTimeout(what: "ffmpeg could not make \(path): \(output.standardError)") }
    }

    /// Where each run of `loud` starts, in the order they come.
    static func onsets(_ samples: [(at: ContinuousClock.Instant, loud: Bool)]) -> [ContinuousClock.Instant] {
        zip(samples.dropFirst(), samples).compactMap { now, before in now.loud && !before.loud ? now.at : nil }
    }

    @Test func pictureAndSoundKeepTogether() async throws {
        let pulse = try await PrivatePulseAudio()
        try await withTearDown {
            try await Self.withScreen { screen in
                try await ReferenceTestBed.run { bed in
                    try await Self.makeFlashes(at: bed.harness.root + "/media/flashes.mp4", seconds: 13)
                    let receiver = try await bed.listedReceiver(arguments: ["--auth", "none", "--video-output", "window", "--audio-output", "pulse"],
                                                                environment: pulse.environment.merging(["DISPLAY": screen.display]) { _, new in new })
                    try await bed.activate("Den TV") { _ in nil }
                    let listener = try LiveListener(pulse)
                    var seen: [(at: ContinuousClock.Instant, loud: Bool)] = []
                    try await withTearDown {
                        _ = try await bed.supervisor.startSession("Den TV", url: bed.media.url("flashes.mp4"))
                        _ = try await Self.windowPID(receiver)
                        // The window's centre, looked at as often as the polling goes.
                        func look() {
                            guard let window = Self.window(on: screen.display), window.width == Self.width, window.height == Self.height,
                                  let centre = try? ScreenPicture.pixels(of: screen.display, x: window.x + Self.width / 2 - 8, y: window.y + Self.height / 2 - 8,
                                                                         region: (16, 16)).pixels else { return }
                            seen.append((.now, centre.reduce(0) { $0 + Int($1) } > centre.count * 128))
                        }
                        // The flashes at 1 and 3 s; paused after them; then from 6 s at twice the
                        // speed (a new ffmpeg): the flashes at 7, 9 and 11 s, to the end.
                        try await bed.harness.waitUntil("past the second flash", seconds: 30) {
                            look()
                            return await bed.playback("Den TV")?.position ?? 0 >= 3.5
                        }
                        _ = try await bed.supervisor.setPlayback("Den TV", PlaybackChanges(isPlaying: false))
                        try await bed.harness.waitUntil("paused") { await bed.playback("Den TV")?.state == .paused }
                        _ = try await bed.supervisor.setPlayback("Den TV", PlaybackChanges(position: 6, speed: 2, isPlaying: true))
                        try await bed.harness.waitUntil("played to the end", seconds: 30) {
                            look()
                            return await bed.playback("Den TV")?.state == .ended
                        }
                    } tearDown: {
                        await listener.stop()
                    }
                    let flashes = Self.onsets(seen), beeps = Self.onsets(listener.heard)
                    // Each flash against the beep nearest it: positive when the picture comes after the sound.
                    let offsets = flashes.compactMap { flash in beeps.min { abs(($0 - flash) / .seconds(1)) < abs(($1 - flash) / .seconds(1)) }.map { (flash - $0) / .seconds(1) } }
                    let first = beeps.first ?? .now
                    func list(_ times: [ContinuousClock.Instant]) -> String { times.map { String(format: "%.3f", ($0 - first) / .seconds(1)) }.joined(separator: ", ") }
                    print("URL picture against sound: flashes seen at \(list(flashes)), beeps heard at \(list(beeps)) s from the first beep; "
                          + "offsets \(offsets.map { String(format: "%+.0f ms", $0 * 1000) }) (looked \(seen.count) times)")
                    #expect(flashes.count == 5 && beeps.count == 5, "five flashes and five beeps")
                    // Never clearly before the sound (without the hold it comes 90-170 ms before), and
                    // after it by a few frames at most (a loaded machine shows it later, never sooner).
                    #expect(offsets.count == flashes.count && offsets.allSatisfy { (-0.05)...0.15 ~= $0 }, "\(offsets)")
                }
            }
        } tearDown: {
            await pulse.stop()
        }
    }
}
