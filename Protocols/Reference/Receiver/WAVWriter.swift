import Glibc

/// Writes interleaved Float32 PCM to a WAV file (IEEE float), fixing up its sizes when finished.
final class WAVWriter {
    let path: String
    private let fd: Int32
    private var dataBytes = 0

    init(path: String, sampleRate: Int, channels: Int) throws(ReceiverError) {
        self.path = path
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw ReceiverError("cannot record to \(path): \(String(cString: strerror(errno)))") }
        var header = [UInt8](repeating: 0, count: 44)
        func put(_ value: UInt32, at offset: Int) { withUnsafeBytes(of: value.littleEndian) { header.replaceSubrange(offset..<(offset + 4), with: $0) } }
        func put16(_ value: UInt16, at offset: Int) { withUnsafeBytes(of: value.littleEndian) { header.replaceSubrange(offset..<(offset + 2), with: $0) } }
        header.replaceSubrange(0..<4, with: Array("RIFF".utf8))
        header.replaceSubrange(8..<16, with: Array("WAVEfmt ".utf8))
        put(16, at: 16)
        put16(3, at: 20)  // IEEE float
        put16(UInt16(channels), at: 22)
        put(UInt32(sampleRate), at: 24)
        put(UInt32(sampleRate * channels * 4), at: 28)
        put16(UInt16(channels * 4), at: 32)
        put16(32, at: 34)
        header.replaceSubrange(36..<40, with: Array("data".utf8))
        _ = header.withUnsafeBytes { write(fd, $0.baseAddress, 44) }
    }

    func append(_ samples: UnsafeBufferPointer<Float>) {
        let n = write(fd, samples.baseAddress, samples.count * 4)
        if n > 0 { dataBytes += n }
    }

    /// Writes the final sizes and closes the file.
    func finish() {
        var riff = UInt32(36 + dataBytes).littleEndian, data = UInt32(dataBytes).littleEndian
        _ = pwrite(fd, &riff, 4, 4)
        _ = pwrite(fd, &data, 4, 40)
        close(fd)
    }
}

/// Something the receiver cannot do; the sentence says why.
struct ReceiverError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
