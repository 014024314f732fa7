import CPipeWireStream
import Testing

/// The check every PipeWire frame passes before its pixels are read: each row must lie within both
/// the bytes the producer says it wrote (the chunk) and the mapped buffer, whatever the producer says.
struct FrameBoundsTests {
    /// 640x480 32-bit pixels: rows of 2560 bytes.
    private static let (width, height, row) = (UInt32(640), UInt32(480), UInt32(2560))

    /// The stride to read with, or the reason the frame is refused.
    private func check(maxsize: UInt32, offset: UInt32 = 0, size: UInt32, stride: Int32,
                       width: UInt32 = width, height: UInt32 = height) -> Result<Int32, Refused> {
        var used: Int32 = -1
        guard let reason = mr_pw_frame_rejection(width, height, maxsize, offset, size, stride, &used) else { return .success(used) }
        return .failure(Refused(reason: String(cString: reason)))
    }

    private struct Refused: Error, Equatable { var reason: String }

    @Test func packedAndPaddedRowsWithinTheChunkAreRead() {
        let packed = Self.row * Self.height
        #expect(check(maxsize: packed, size: packed, stride: Int32(Self.row)) == .success(2560))
        #expect(check(maxsize: packed, size: packed, stride: 0) == .success(2560), "a stride of 0 means packed rows")
        // Rows padded to 2816 bytes: the last row needs only its pixels, not its padding.
        let needed = 2816 * (Self.height - 1) + Self.row
        #expect(check(maxsize: 2816 * Self.height, size: needed, stride: 2816) == .success(2816))
        // The frame placed after a header in its buffer.
        #expect(check(maxsize: packed + 4096, offset: 4096, size: packed, stride: 0) == .success(2560))
    }

    @Test func aStrideShorterThanARowOrNegativeIsRefused() {
        let packed = Self.row * Self.height
        #expect(check(maxsize: packed, size: packed, stride: 2556).refused)
        #expect(check(maxsize: packed, size: packed, stride: 4).refused)
        #expect(check(maxsize: packed, size: packed, stride: -2560).refused)
        #expect(check(maxsize: packed, size: packed, stride: Int32.min).refused)
    }

    @Test func rowsPastTheChunkOrTheBufferAreRefused() {
        let packed = Self.row * Self.height
        let padded = 2816 * (Self.height - 1) + Self.row
        // One byte short of the chunk, whatever the buffer's size.
        #expect(check(maxsize: 2816 * Self.height, size: padded - 1, stride: 2816).refused)
        #expect(check(maxsize: packed * 2, size: packed - 1, stride: 0).refused)
        // The chunk says more than the buffer holds (a producer's lie).
        #expect(check(maxsize: packed - 1, size: packed, stride: 0).refused)
        #expect(check(maxsize: packed, offset: 4, size: packed, stride: 0).refused)
        // Offsets and strides at their limits do not wrap around.
        #expect(check(maxsize: UInt32.max, offset: UInt32.max, size: UInt32.max, stride: 0).refused)
        #expect(check(maxsize: UInt32.max, size: UInt32.max, stride: Int32.max, width: 16384, height: 16384).refused)
        #expect(check(maxsize: UInt32.max, size: UInt32.max, stride: 0, width: 1 << 30, height: 2).refused)
    }

    @Test func aFrameWithoutPixelsIsRefused() {
        #expect(check(maxsize: 4096, size: 4096, stride: 0, width: 0, height: 1).refused)
        #expect(check(maxsize: 4096, size: 4096, stride: 0, width: 1, height: 0).refused)
    }

    @Test func theReasonSaysWhatIsWrong() {
        let packed = Self.row * Self.height
        #expect(check(maxsize: packed, size: packed, stride: 100) == .failure(Refused(reason: "the frame's stride is shorter than a row of its pixels")))
        #expect(check(maxsize: packed, size: packed, stride: -1) == .failure(Refused(reason: "the frame's rows go upwards (a negative stride)")))
        #expect(check(maxsize: packed, size: packed / 2, stride: 0)
                == .failure(Refused(reason: "the frame's rows reach past the data the producer wrote or past its buffer")))
    }
}

private extension Result {
    var refused: Bool { if case .failure = self { true } else { false } }
}
