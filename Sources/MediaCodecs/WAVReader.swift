import Glibc

/// Reads a WAV file's PCM (16-bit integer or 32-bit float, any channel count) as interleaved
/// Float32, a block at a time, skipping chunks it does not need.
public final class WAVReader {
    public let path: String
    public let sampleRate: Int
    public let channels: Int
    /// Frames (samples per channel) in the file.
    public let frames: Int
    private let fd: Int32
    private let isFloat: Bool
    private var remainingBytes: Int

    public init(path: String) throws(CodecError) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw CodecError("cannot open \(path): \(String(cString: strerror(errno)))") }
        let found: (tag: Int, channels: Int, rate: Int, bits: Int, size: Int)
        do {
            found = try Self.findData(fd)
        } catch {
            close(fd)
            throw CodecError("\(path) is not a WAV file this can read: \(error.message)")
        }
        self.path = path
        self.fd = fd
        sampleRate = found.rate
        channels = found.channels
        isFloat = found.tag == 3
        remainingBytes = found.size
        frames = found.size / (found.channels * found.bits / 8)
    }

    /// Walks the chunks to the data, reading the format on the way; leaves `fd` at the first sample.
    private static func findData(_ fd: Int32) throws(CodecError) -> (tag: Int, channels: Int, rate: Int, bits: Int, size: Int) {
        func read(_ count: Int) -> [UInt8]? {
            var bytes = [UInt8](repeating: 0, count: count)
            return Glibc.read(fd, &bytes, count) == count ? bytes : nil
        }
        func little(_ bytes: [UInt8], _ at: Int, _ size: Int) -> Int { (0..<size).reduce(0) { $0 | Int(bytes[at + $1]) << (8 * $1) } }
        var status = stat()
        guard fstat(fd, &status) == 0 else { throw CodecError("cannot read its size: \(String(cString: strerror(errno)))") }
        let fileSize = Int(status.st_size)
        /// Moves past `count` bytes, which must be in the file.
        func skip(_ count: Int) throws(CodecError) {
            let at = lseek(fd, 0, SEEK_CUR)
            guard at >= 0, Int(at) + count <= fileSize, lseek(fd, off_t(count), SEEK_CUR) >= 0 else {
                throw CodecError("a chunk runs past the end of the file")
            }
        }
        guard let riff = read(12), riff[0..<4] == [0x52, 0x49, 0x46, 0x46][...], riff[8..<12] == [0x57, 0x41, 0x56, 0x45][...] else {
            throw CodecError("no RIFF/WAVE header")
        }
        var format: (tag: Int, channels: Int, rate: Int, bits: Int)?
        while true {
            guard let header = read(8) else { throw CodecError("no data chunk") }
            let size = little(header, 4, 4)
            let name = String(decoding: header[0..<4], as: UTF8.self)
            if name == "fmt " {
                // Only the first 40 bytes mean anything to us; the size comes from the file.
                let kept = min(size, 40)
                guard size >= 16, let body = read(kept) else { throw CodecError("a short fmt chunk") }
                try skip(size - kept + size % 2)
                var tag = little(body, 0, 2)
                if tag == 0xFFFE, size >= 26 { tag = little(body, 24, 2) }  // WAVE_FORMAT_EXTENSIBLE: the subformat's tag
                format = (tag, little(body, 2, 2), little(body, 4, 4), little(body, 14, 2))
            } else if name == "data" {
                guard let format else { throw CodecError("data before fmt") }
                guard (format.tag == 1 && format.bits == 16) || (format.tag == 3 && format.bits == 32) else {
                    let kind = switch format.tag { case 1: "integer PCM"; case 3: "float"; default: "format tag 0x\(String(format.tag, radix: 16))" }
                    throw CodecError("\(format.bits)-bit \(kind) samples; this reads 16-bit integer PCM or 32-bit float")
                }
                guard format.channels > 0, format.rate > 0 else { throw CodecError("\(format.channels) channels at \(format.rate) Hz") }
                // A streamed WAV may claim more data than it has (0xFFFFFFFF): what is there is read.
                let start = Int(lseek(fd, 0, SEEK_CUR))
                return (format.tag, format.channels, format.rate, format.bits, min(size, max(fileSize - start, 0)))
            } else {
                try skip(size + size % 2)
            }
        }
    }

    deinit { close(fd) }

    /// Up to `frames` whole frames as interleaved Float32; empty at the end of the data (a partial
    /// last frame is dropped).
    public func read(frames count: Int) -> [Float] {
        let bytesPerSample = isFloat ? 4 : 2
        let frameBytes = channels * bytesPerSample
        let wanted = min(count * frameBytes, remainingBytes / frameBytes * frameBytes)
        guard wanted > 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: wanted)
        var got = 0
        while got < wanted {
            let n = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + got, wanted - got) }
            if n <= 0 { break }
            got += n
        }
        remainingBytes = got == wanted ? remainingBytes - got : 0  // a file cut short ends here
        let samples = got / frameBytes * channels
        return bytes.withUnsafeBytes { raw in
            isFloat ? (0..<samples).map { raw.load(fromByteOffset: 4 * $0, as: Float.self) }
                    : (0..<samples).map { Float(raw.load(fromByteOffset: 2 * $0, as: Int16.self)) / 32768 }
        }
    }
}
