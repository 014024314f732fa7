import CPipeWireStream
import Glibc
import Synchronization

/// A Wayland screen as a PipeWire ScreenCast stream: the node a compositor made for us (through
/// the xdg-desktop-portal, or mutter's own ScreenCast API), consumed as raw 32-bit pixels in shared
/// memory (never DMA-BUF, which needs a GPU). The compositor sends a frame when the screen changes;
/// the newest one is kept for the capture session, which repeats it when nothing changed.
public final class PipeWireScreenStream: Sendable {
    /// The PipeWire node consumed, and the name our stream's node has in the PipeWire graph.
    public let node: UInt32
    public let name: String
    private let latest: LatestScreenFrame
    private let stream: Mutex<OpaquePointer?>
    /// Run once the stream is closed: the portal's session is closed there.
    private let onClose: Mutex<(@Sendable () -> Void)?>

    /// Connects to the PipeWire daemon behind `remote` (a connected socket, taken: from the portal's
    /// OpenPipeWireRemote, or the daemon's own socket) and consumes `node`.
    public init(remote: Int32, node: UInt32, name: String = "mediaroute-screen-\(getpid())",
                onClose: (@Sendable () -> Void)? = nil) throws(ScreenCaptureError) {
        (self.node, self.name) = (node, name)
        latest = LatestScreenFrame(node: node)
        let context = Unmanaged.passRetained(latest).toOpaque()
        let callbacks = mr_pw_screen_stream_callbacks(context: context, frame: { context, pixels, width, height, stride, order in
            guard let context, let pixels, let order = PixelOrder(cOrder: order), width > 0, height > 0 else { return }
            let bytes = UnsafeRawBufferPointer(start: pixels, count: Int(stride) * (Int(height) - 1) + Int(width) * 4)
            Unmanaged<LatestScreenFrame>.fromOpaque(context).takeUnretainedValue()
                .store(bytes, width: Int(width), height: Int(height), stride: Int(stride), order: order)
        }, ended: { context, reason in
            guard let context else { return }
            Unmanaged<LatestScreenFrame>.fromOpaque(context).takeUnretainedValue()
                .end(reason.map { String(cString: $0) } ?? "the screencast stream ended")
        }, rejected: { context, reason in
            guard let context else { return }
            Unmanaged<LatestScreenFrame>.fromOpaque(context).takeUnretainedValue()
                .reject(reason.map { String(cString: $0) } ?? "a frame does not fit its buffer")
        })
        var error = [CChar](repeating: 0, count: 256)
        guard let opened = mr_pw_screen_stream_open(remote, node, name, callbacks, &error, error.count) else {
            Unmanaged<LatestScreenFrame>.fromOpaque(context).release()
            throw ScreenCaptureError(String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        nonisolated(unsafe) let handle = opened
        stream = Mutex(handle)
        self.onClose = Mutex(onClose)
    }

    deinit { close() }

    /// Frames the compositor has sent so far.
    public var framesReceived: Int { latest.state.withLock { $0.received } }
    /// The screen's size, once a frame has come.
    public var size: (width: Int, height: Int)? { latest.state.withLock { $0.received > 0 ? ($0.width, $0.height) : nil } }
    /// Frames dropped because their layout does not fit their buffer (a producer's bug), and why the
    /// first was: such a frame is never read.
    public var framesRejected: (count: Int, first: String?) { latest.state.withLock { ($0.rejected, $0.firstRejection) } }
    /// Why the stream ended (the compositor stopped it or went away, PipeWire failed), once it has.
    public var ended: String? { latest.state.withLock { $0.ended } }

    /// Returns once the first frame has come; fails if the stream ends first or none comes in time.
    public func waitForFirstFrame(within limit: Duration = .seconds(15)) async throws(ScreenCaptureError) {
        let deadline = ContinuousClock.now + limit
        while true {
            let (received, ended) = latest.state.withLock { ($0.received, $0.ended) }
            if received > 0 { return }
            if let ended { throw ScreenCaptureError("no frame came from PipeWire node \(node): \(ended)") }
            guard ContinuousClock.now < deadline else {
                if let rejected = latest.state.withLock({ $0.firstRejection }) {
                    throw ScreenCaptureError("PipeWire node \(node) sent no frame that could be read within \(limit): \(rejected)")
                }
                throw ScreenCaptureError("PipeWire node \(node) sent no frame within \(limit) (is the screencast started, and does it offer frames in memory rather than DMA-BUF only?)")
            }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Disconnects from PipeWire (our node leaves the graph before this returns), then lets the
    /// screencast go. Safe to call twice.
    public func close() {
        guard let handle = stream.withLock({ stream -> OpaquePointer? in defer { stream = nil }; return stream }) else { return }
        nonisolated(unsafe) let closing = handle
        mr_pw_screen_stream_close(closing)
        Unmanaged.passUnretained(latest).release()  // no callback runs any more: the stream's reference goes
        latest.end("the screencast stream was closed")
        onClose.withLock { action in defer { action = nil }; return action }?()
    }
}

extension PipeWireScreenStream: ScreenFrameSource {
    public var width: Int { size?.width ?? 0 }
    public var height: Int { size?.height ?? 0 }

    func grabPixels<T>(_ body: (ScreenPixels) -> T) throws(ScreenCaptureError) -> T {
        // Converted under the lock: PipeWire's thread waits to store the next frame meanwhile.
        nonisolated(unsafe) var result: Result<T, ScreenCaptureError>?
        latest.state.withLock { state in
            if let ended = state.ended { return result = .failure(ScreenCaptureError(ended)) }
            guard state.received > 0 else { return result = .failure(ScreenCaptureError("PipeWire node \(node) has sent no frame yet")) }
            let (width, height, stride, order) = (state.width, state.height, state.stride, state.order)
            result = .success(state.pixels.withUnsafeBytes { body(ScreenPixels(bytes: $0, width: width, height: height, stride: stride, order: order)) })
        }
        return try result!.get()
    }
}

extension PixelOrder {
    init?(cOrder: Int32) {
        switch UInt32(bitPattern: cOrder) {
        case MR_PW_BGRX.rawValue: self = .bgrx
        case MR_PW_BGRA.rawValue: self = .bgra
        case MR_PW_RGBX.rawValue: self = .rgbx
        case MR_PW_RGBA.rawValue: self = .rgba
        case MR_PW_XRGB.rawValue: self = .xrgb
        case MR_PW_ARGB.rawValue: self = .argb
        case MR_PW_XBGR.rawValue: self = .xbgr
        case MR_PW_ABGR.rawValue: self = .abgr
        default: return nil
        }
    }
}
