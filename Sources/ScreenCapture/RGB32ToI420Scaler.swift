/// Turns a screen's 32-bit pixels (any `PixelOrder`, rows `stride` bytes apart) into an I420 frame
/// of another size: each output pixel takes the nearest screen pixel, each chroma sample the mean
/// of the four it covers (BT.601, limited range, as x264 and ffmpeg assume for yuv420p).
public struct RGB32ToI420Scaler: Sendable {
    public let sourceWidth: Int
    public let sourceHeight: Int
    /// Bytes from one screen row to the next (at least `sourceWidth * 4`).
    public let stride: Int
    public let order: PixelOrder
    public let width: Int
    public let height: Int
    private let columns: [Int]
    private let rows: [Int]

    public init(sourceWidth: Int, sourceHeight: Int, stride: Int? = nil, order: PixelOrder = .bgrx, width: Int, height: Int) {
        (self.sourceWidth, self.sourceHeight, self.width, self.height) = (sourceWidth, sourceHeight, width, height)
        (self.stride, self.order) = (stride ?? sourceWidth * 4, order)
        let rowBytes = self.stride
        // Pixel centres mapped onto the screen: (x + 0.5) * source / output.
        columns = (0..<width).map { min((2 * $0 + 1) * sourceWidth / (2 * width), sourceWidth - 1) * 4 }
        rows = (0..<height).map { min((2 * $0 + 1) * sourceHeight / (2 * height), sourceHeight - 1) * rowBytes }
    }

    public var frameBytes: Int { width * height + 2 * ((width + 1) / 2) * ((height + 1) / 2) }
    /// The bytes `convert` reads: every row but the last is `stride` long.
    public var screenBytes: Int { (sourceHeight - 1) * stride + sourceWidth * 4 }

    /// Converts `screen` (`screenBytes`) into `frame` (`frameBytes`).
    public func convert(_ screen: UnsafeRawBufferPointer, into frame: UnsafeMutableRawBufferPointer) {
        precondition(screen.count >= screenBytes && frame.count >= frameBytes)
        let source = screen.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let luma = frame.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let chromaWidth = (width + 1) / 2
        let u = luma + width * height, v = u + chromaWidth * ((height + 1) / 2)
        let (redAt, greenAt, blueAt) = order.offsets
        columns.withUnsafeBufferPointer { columns in
            rows.withUnsafeBufferPointer { rows in
                for y in Swift.stride(from: 0, to: height, by: 2) {
                    let (upper, lower) = (rows[y], rows[min(y + 1, height - 1)])  // no array per row pair: this loop is the hot path
                    for x in Swift.stride(from: 0, to: width, by: 2) {
                        var (r, g, b) = (0, 0, 0)
                        for dy in 0..<2 where y + dy < height {
                            for dx in 0..<2 where x + dx < width {
                                let pixel = source + (dy == 0 ? upper : lower) + columns[x + dx]
                                let (pb, pg, pr) = (Int(pixel[blueAt]), Int(pixel[greenAt]), Int(pixel[redAt]))
                                luma[(y + dy) * width + x + dx] = UInt8(truncatingIfNeeded: ((66 * pr + 129 * pg + 25 * pb + 128) >> 8) + 16)
                                (r, g, b) = (r + pr, g + pg, b + pb)
                            }
                        }
                        let count = (y + 1 < height ? 2 : 1) * (x + 1 < width ? 2 : 1)
                        (r, g, b) = (r / count, g / count, b / count)
                        let chroma = (y / 2) * chromaWidth + x / 2
                        u[chroma] = UInt8(truncatingIfNeeded: ((-38 * r - 74 * g + 112 * b + 128) >> 8) + 128)
                        v[chroma] = UInt8(truncatingIfNeeded: ((112 * r - 94 * g - 18 * b + 128) >> 8) + 128)
                    }
                }
            }
        }
    }
}
