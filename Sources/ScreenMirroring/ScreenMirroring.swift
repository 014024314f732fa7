import AVSystemRouting
import Foundation
import MediaRouteIPC
@_exported import ScreenCapture

/// The screen mirrored to a route's device (one with `realtimeVideoStreaming`): the X11 screen, or a
/// Wayland desktop's ScreenCast stream through its portal, is captured at the stream's size and rate
/// and written into the route's video stream, whose driver encodes and sends it. Capture runs only between `startScreenMirroring` and `stop()`
/// (or the stream's end): the specification's "screen frames only while screen mirroring is
/// active".
public final class ScreenMirroring: Sendable {
    public let route: AVSystemRoute
    public let stream: AVSystemRouteSampleStream
    let capture: ScreenCaptureSession

    init(route: AVSystemRoute, stream: AVSystemRouteSampleStream, capture: ScreenCaptureSession) {
        (self.route, self.stream, self.capture) = (route, stream, capture)
    }

    /// The display captured (`:0`, ...), and the frames' size and rate.
    public var display: String { capture.display }
    public var format: SampleFormat { stream.format }
    /// Frames captured, ticks missed, and why capture ended by itself, if it did.
    public var statistics: ScreenCaptureSession.Statistics { capture.statistics }
    /// True until the capture has closed its connection to the display.
    public var isCapturing: Bool { capture.isCapturing }

    /// Stops capturing (the display connection is closed when this returns) and ends the stream.
    public func stop() async throws {
        let capture = capture
        _ = try? await onThreadOfItsOwn { capture.stop() }  // waits for the capture thread's last frame
        try await stream.stop()
    }
}

extension AVSystemRoute {
    /// Mirrors the screen to the route's device, at the size and rate asked for (the screen's size
    /// fitted within 1920x1080, 30 fps, by default): the X display `settings.display` if given, else
    /// on a Wayland desktop the screen the person grants in the ScreenCast portal's dialog, else the
    /// X display `DISPLAY`.
    /// Fails, with the reason, when there is no screen to capture (no portal, the person declined)
    /// or the device takes no video.
    public func startScreenMirroring(_ settings: ScreenCaptureSession.Settings = .init()) async throws -> ScreenMirroring {
        let capture = try await ScreenCaptureSession.open(settings)
        let stream: AVSystemRouteSampleStream
        do {
            stream = try await startVideoStream(width: capture.width, height: capture.height, frameRate: capture.frameRate)
        } catch {
            capture.stop()
            throw error
        }
        do {
            try capture.start { frame, timestamp in
                do {
                    _ = try stream.write(frame: frame, timestamp: timestamp)  // a full ring drops the frame (counted in overruns)
                    return .next
                } catch {
                    return .end  // the stream ended: the route went away, or the driver stopped
                }
            }
        } catch {
            try? await stream.stop()
            throw error
        }
        return ScreenMirroring(route: self, stream: stream, capture: capture)
    }
}
