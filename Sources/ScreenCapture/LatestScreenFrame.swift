import Foundation
import Synchronization

/// The newest frame a PipeWire stream delivered, copied out of PipeWire's buffer on its thread so
/// that the capture thread can convert it at its own pace (again, when no new frame came).
final class LatestScreenFrame: Sendable {
    struct State {
        var pixels: [UInt8] = []
        var width = 0, height = 0, stride = 0
        var order = PixelOrder.bgrx
        /// Frames received from the compositor.
        var received = 0
        /// Why the stream ended, once it has.
        var ended: String?
        /// Frames dropped because they do not fit their buffer, and why the first was.
        var rejected = 0
        var firstRejection: String?
    }

    let state = Mutex(State())
    /// The PipeWire node the frames come from, for the message about a dropped frame.
    let node: UInt32

    init(node: UInt32) { self.node = node }

    func store(_ pixels: UnsafeRawBufferPointer, width: Int, height: Int, stride: Int, order: PixelOrder) {
        state.withLock { state in
            if state.pixels.count != pixels.count { state.pixels = [UInt8](repeating: 0, count: pixels.count) }
            state.pixels.withUnsafeMutableBytes { $0.copyMemory(from: pixels) }
            (state.width, state.height, state.stride, state.order) = (width, height, stride, order)
            state.received += 1
        }
    }

    /// Counts a frame that was not read; the first is written to standard error (a producer's bug
    /// the person can report; once, not at every frame).
    func reject(_ reason: String) {
        let first = state.withLock { state in
            state.rejected += 1
            guard state.firstRejection == nil else { return false }
            state.firstRejection = reason
            return true
        }
        if first { FileHandle.standardError.write(Data("ScreenCapture: frames of PipeWire node \(node) are dropped: \(reason)\n".utf8)) }
    }

    func end(_ reason: String) {
        state.withLock { if $0.ended == nil { $0.ended = reason } }
    }
}
