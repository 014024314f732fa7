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
    }

    let state = Mutex(State())

    func store(_ pixels: UnsafeRawBufferPointer, width: Int, height: Int, stride: Int, order: PixelOrder) {
        state.withLock { state in
            if state.pixels.count != pixels.count { state.pixels = [UInt8](repeating: 0, count: pixels.count) }
            state.pixels.withUnsafeMutableBytes { $0.copyMemory(from: pixels) }
            (state.width, state.height, state.stride, state.order) = (width, height, stride, order)
            state.received += 1
        }
    }

    func end(_ reason: String) {
        state.withLock { if $0.ended == nil { $0.ended = reason } }
    }
}
