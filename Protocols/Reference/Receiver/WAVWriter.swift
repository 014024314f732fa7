/// Writes interleaved Float32 PCM to a WAV file (IEEE float), fixing up its sizes when finished.
/// A WAV file's sizes are 32-bit: the recording stops just under 4 GiB (about 3 hours of 48 kHz stereo).
final class WAVWriter {
    private let file: RecordingFile
    private static let headerSize = 44

    init(path: String, sampleRate: Int, channels: Int) throws(ReceiverError) {
        file = try RecordingFile(path: path, limit: Int(UInt32.max) - Self.headerSize)
        var header = [UInt8](repeating: 0, count: Self.headerSize)
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
        _ = header.withUnsafeBytes { file.append($0) }
    }

    func append(_ samples: UnsafeBufferPointer<Float>) {
        file.append(UnsafeRawBufferPointer(samples))
    }

    /// Writes the final sizes; the file closes when the writer goes.
    func finish() {
        let data = UInt32(file.written - Self.headerSize)
        file.write(withUnsafeBytes(of: (36 + data).littleEndian, Array.init), at: 4)
        file.write(withUnsafeBytes(of: data.littleEndian, Array.init), at: 40)
    }
}

/// Something the receiver cannot do; the sentence says why.
struct ReceiverError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
