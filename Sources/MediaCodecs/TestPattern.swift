/// Moving colour bars with a bouncing box, as I420 frames: what screen mirroring is replaced by
/// here, with detail for the encoder and motion between frames.
public struct TestPattern: Sendable {
    public let width: Int
    public let height: Int

    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    public var frameBytes: Int { width * height + 2 * ((width + 1) / 2) * ((height + 1) / 2) }

    /// Draws frame `index` into `frame` (`frameBytes` long).
    public func draw(_ index: Int, into frame: UnsafeMutableRawBufferPointer) {
        let box = (x: (index * 7) % max(width - 40, 1), y: (index * 5) % max(height - 40, 1))
        for y in 0..<height {
            let row = y * width
            let inBoxRow = (box.y..<(box.y + 40)).contains(y)
            for x in 0..<width {
                frame[row + x] = inBoxRow && (box.x..<(box.x + 40)).contains(x) ? 235 : UInt8(16 + ((x + index * 4) / 40 % 8) * 27)
            }
        }
        let chromaWidth = (width + 1) / 2, chromaHeight = (height + 1) / 2
        let u = width * height, v = u + chromaWidth * chromaHeight
        for y in 0..<chromaHeight {
            for x in 0..<chromaWidth {
                frame[u + y * chromaWidth + x] = UInt8(64 + (x * 2 + index) % 128)
                frame[v + y * chromaWidth + x] = UInt8(192 - (y * 2) % 128)
            }
        }
    }

    public func frame(_ index: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: frameBytes)
        bytes.withUnsafeMutableBytes { draw(index, into: $0) }
        return bytes
    }
}
