import Foundation
import Glibc
import Synchronization

/// Captures a screen at a steady frame rate on a thread of its own, from `start` until `stop`:
/// each tick grabs the screen, scales it to I420 at the output size and hands the frame to
/// `deliver`, stamped with the monotonic time of the grab. `init` connects to the display (and
/// learns its size) without grabbing anything; the connection is closed before `stop` returns.
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
    /// The connection until `start` hands it to the capture thread (or `stop` closes it).
    private let idle: Mutex<X11ScreenGrabber?>
    private let scaler: BGRXToI420Scaler

    /// Connects to the display; fails, with the reason, if it cannot be captured.
    public init(_ settings: Settings) throws(ScreenCaptureError) {
        guard (1...120).contains(settings.frameRate) else { throw ScreenCaptureError("a frame rate of \(settings.frameRate) is not from 1 to 120") }
        let grabber = try X11ScreenGrabber(display: settings.display)
        let size = Self.outputSize(screen: (grabber.width, grabber.height), asked: (settings.width, settings.height))
        guard size.width >= 16, size.height >= 16, size.width % 2 == 0, size.height % 2 == 0 else {
            grabber.close()
            throw ScreenCaptureError("frames of \(size.width)x\(size.height) cannot be encoded: width and height must be even and at least 16")
        }
        (display, screenWidth, screenHeight) = (grabber.display, grabber.width, grabber.height)
        (width, height, frameRate) = (size.width, size.height, settings.frameRate)
        scaler = BGRXToI420Scaler(sourceWidth: grabber.width, sourceHeight: grabber.height, width: size.width, height: size.height)
        nonisolated(unsafe) let connected = grabber
        idle = Mutex(connected)
    }

    /// Starts capturing into `deliver` (called on the capture thread). Once only.
    public func start(deliver: @escaping @Sendable (UnsafeRawBufferPointer, UInt64) -> Delivery) throws(ScreenCaptureError) {
        // The grabber moves to the capture thread, which alone uses and closes it.
        guard let taken = idle.withLock({ idle -> X11ScreenGrabber? in
            defer { idle = nil }
            if idle != nil { running.store(true, ordering: .releasing) }  // before the lock goes: a stop now waits for the thread
            return idle
        }) else {
            throw ScreenCaptureError("the capture of \(display) was already started or stopped")
        }
        nonisolated(unsafe) let grabber = taken
        Thread.detachNewThread { [self] in
            capture(grabber, scaler: scaler, deliver: deliver)
            grabber.close()
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

    private func capture(_ grabber: X11ScreenGrabber, scaler: BGRXToI420Scaler, deliver: (UnsafeRawBufferPointer, UInt64) -> Delivery) {
        var frame = [UInt8](repeating: 0, count: scaler.frameBytes)
        let period = 1_000_000_000 / UInt64(frameRate)
        var due = Self.now()
        while !stopping.load(ordering: .relaxed) {
            Self.sleep(until: due)
            if stopping.load(ordering: .relaxed) { break }
            let grabbedAt = Self.now()
            do {
                try grabber.grab { screen in frame.withUnsafeMutableBytes { scaler.convert(screen, into: $0) } }
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
        idle.withLock { idle in
            idle?.close()
            idle = nil
        }
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
