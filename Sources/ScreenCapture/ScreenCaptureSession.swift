import Foundation
import Glibc
import Synchronization

/// Captures a screen at a steady frame rate on a thread of its own, from `start` until `stop`:
/// each tick takes the screen (an X11 grab, or the newest frame of a Wayland desktop's PipeWire
/// ScreenCast stream, repeated while the compositor sends none), scales it to I420 at the output
/// size and hands the frame to `deliver`, stamped with the monotonic time of the tick. Making the
/// session connects to the screen (and learns its size); the connection or stream is closed
/// before `stop` returns.
public final class ScreenCaptureSession: Sendable {
    public struct Settings: Sendable, Hashable {
        /// The X display (`DISPLAY` when nil).
        public var display: String?
        /// The frames' size; the screen's (fitted within 1920x1080) when nil.
        public var width: Int?
        public var height: Int?
        public var frameRate: Int

        public init(display: String? = nil, width: Int? = nil, height: Int? = nil, frameRate: Int = 30) {
            (self.display, self.width, self.height, self.frameRate) = (display, width, height, frameRate)
        }
    }

    /// What `deliver` says back: keep capturing, or the consumer is gone and the session ends.
    public enum Delivery: Sendable { case next, end }

    public struct Statistics: Sendable, Hashable {
        /// Frames grabbed and handed on.
        public var frames = 0
        /// Ticks missed because a grab, conversion or delivery took longer than a frame.
        public var late = 0
        /// Set once the session has ended by itself (the display went away, `deliver` said `.end`).
        public var ended: String?
    }

    public let display: String
    public let screenWidth: Int
    public let screenHeight: Int
    public let width: Int
    public let height: Int
    public let frameRate: Int
    private let stopping = Atomic<Bool>(false)
    private let state = Mutex(Statistics())
    private let finished = DispatchSemaphore(value: 0)
    private let running = Atomic<Bool>(false)
    /// The source (X connection, PipeWire stream) until `start` hands it to the capture thread (or `stop` closes it).
    private let idle: Mutex<(any ScreenFrameSource)?>

    /// Connects to the X display; fails, with the reason, if it cannot be captured.
    public convenience init(_ settings: Settings) throws(ScreenCaptureError) {
        let grabber = try X11ScreenGrabber(display: settings.display)
        try self.init(grabber, display: grabber.display, settings: settings)
    }

    /// Captures a PipeWire ScreenCast stream that has sent its first frame (its size is the screen's).
    public convenience init(screenCast stream: PipeWireScreenStream, settings: Settings) throws(ScreenCaptureError) {
        guard stream.size != nil else {
            stream.close()
            throw ScreenCaptureError("PipeWire node \(stream.node) has sent no frame yet: its size is not known")
        }
        try self.init(stream, display: "the screencast (PipeWire node \(stream.node))", settings: settings)
    }

    /// The screen of this session, asked for the way the session's environment says: the X display
    /// `settings.display` when given; else, on a Wayland desktop (`WAYLAND_DISPLAY`), a ScreenCast
    /// stream the person grants through xdg-desktop-portal's dialog (even with Xwayland's `DISPLAY`
    /// beside it: Xwayland's root window holds only X clients' windows, not the desktop); else the
    /// X display `DISPLAY`.
    public static func open(_ settings: Settings) async throws(ScreenCaptureError) -> ScreenCaptureSession {
        guard settings.display == nil, SessionDisplays.isWayland else { return try ScreenCaptureSession(settings) }
        let stream = try await ScreenCastPortal.openStream()
        do {
            try await stream.waitForFirstFrame()
        } catch {
            stream.close()
            throw error
        }
        return try ScreenCaptureSession(screenCast: stream, settings: settings)
    }

    private init(_ source: sending any ScreenFrameSource, display: String, settings: Settings) throws(ScreenCaptureError) {
        guard (1...120).contains(settings.frameRate) else {
            source.close()
            throw ScreenCaptureError("a frame rate of \(settings.frameRate) is not from 1 to 120")
        }
        let size = Self.outputSize(screen: (source.width, source.height), asked: (settings.width, settings.height))
        guard size.width >= 16, size.height >= 16, size.width % 2 == 0, size.height % 2 == 0 else {
            source.close()
            throw ScreenCaptureError("frames of \(size.width)x\(size.height) cannot be encoded: width and height must be even and at least 16")
        }
        (self.display, screenWidth, screenHeight) = (display, source.width, source.height)
        (width, height, frameRate) = (size.width, size.height, settings.frameRate)
        idle = Mutex(source)
    }

    /// Starts capturing into `deliver` (called on the capture thread). Once only.
    public func start(deliver: @escaping @Sendable (UnsafeRawBufferPointer, UInt64) -> Delivery) throws(ScreenCaptureError) {
        // The source moves to the capture thread, which alone uses and closes it.
        guard let taken = idle.withLock({ idle -> (any ScreenFrameSource)? in
            defer { idle = nil }
            if idle != nil { running.store(true, ordering: .releasing) }  // before the lock goes: a stop now waits for the thread
            return idle
        }) else {
            throw ScreenCaptureError("the capture of \(display) was already started or stopped")
        }
        nonisolated(unsafe) let source = taken
        Thread.detachNewThread { [self] in
            capture(source, deliver: deliver)
            source.close()
            running.store(false, ordering: .releasing)
            finished.signal()
        }
    }

    /// The screen's size fitted within 1920x1080 (aspect kept, even) unless a size was asked for.
    static func outputSize(screen: (Int, Int), asked: (Int?, Int?)) -> (width: Int, height: Int) {
        if let width = asked.0, let height = asked.1 { return (width, height) }
        let scale = min(1, 1920 / Double(screen.0), 1080 / Double(screen.1))
        return (Int(Double(screen.0) * scale) & ~1, Int(Double(screen.1) * scale) & ~1)
    }

    public var statistics: Statistics { state.withLock { $0 } }
    /// True until the capture thread has closed its X connection.
    public var isCapturing: Bool { running.load(ordering: .acquiring) }

    private func capture(_ source: any ScreenFrameSource, deliver: (UnsafeRawBufferPointer, UInt64) -> Delivery) {
        var scaler = RGB32ToI420Scaler(sourceWidth: screenWidth, sourceHeight: screenHeight, width: width, height: height)
        var frame = [UInt8](repeating: 0, count: scaler.frameBytes)
        let period = 1_000_000_000 / UInt64(frameRate)
        var due = Self.now()
        while !stopping.load(ordering: .relaxed) {
            Self.sleep(until: due)
            if stopping.load(ordering: .relaxed) { break }
            let grabbedAt = Self.now()
            do {
                try source.grabPixels { screen in
                    if (screen.width, screen.height, screen.stride, screen.order) != (scaler.sourceWidth, scaler.sourceHeight, scaler.stride, scaler.order) {
                        // A stream's first frame, or a screen that changed its size or layout.
                        scaler = RGB32ToI420Scaler(sourceWidth: screen.width, sourceHeight: screen.height, stride: screen.stride, order: screen.order,
                                                   width: width, height: height)
                    }
                    frame.withUnsafeMutableBytes { scaler.convert(screen.bytes, into: $0) }
                }
            } catch {
                state.withLock { $0.ended = error.description }
                return
            }
            let delivery = frame.withUnsafeBytes { deliver($0, grabbedAt) }
            state.withLock { $0.frames += 1 }
            if delivery == .end {
                state.withLock { $0.ended = "the stream the frames went to has ended" }
                return
            }
            due += period
            let now = Self.now()
            if now > due + period {
                // Behind by more than a frame: skip the missed ticks rather than burst.
                let missed = (now - due) / period
                due += missed * period
                state.withLock { $0.late += Int(missed) }
            }
        }
    }

    /// Stops capturing and returns once the X connection is closed (within one frame's work).
    public func stop() {
        stopping.store(true, ordering: .relaxed)
        // Taken under the lock (which guards only the hand-over to `start`), closed outside it.
        let unstarted = idle.withLock { idle -> (any ScreenFrameSource)? in
            defer { idle = nil }
            return idle
        }
        unstarted?.close()
        guard running.load(ordering: .acquiring) else { return }
        finished.wait()
        finished.signal()  // a second stop returns at once too
    }

    static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    private static func sleep(until deadline: UInt64) {
        var time = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &time, nil) == EINTR {}
    }
}
