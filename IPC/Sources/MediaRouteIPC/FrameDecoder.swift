/// Splits a byte stream into frames: a 4-byte big-endian length, then that many bytes.
///
/// Feeding bytes in any split (one at a time or all at once) yields the same frames; the
/// decoder keeps at most one partial frame and never allocates for a length it has refused.
public struct FrameDecoder: Sendable {
    public static let headerLength = 4
    /// 16 MiB: the default ceiling until the handshake negotiates another.
    public static let defaultMaximumFrameLength = 16 * 1024 * 1024

    public var maximumFrameLength: Int
    private var buffer: [UInt8] = []
    private var readIndex = 0
    /// Stream offset of `buffer[0]`, so callers can tell where each frame started.
    private var bufferStreamOffset = 0

    public init(maximumFrameLength: Int = FrameDecoder.defaultMaximumFrameLength) {
        self.maximumFrameLength = maximumFrameLength
    }

    /// Bytes received but not yet returned as frames.
    public var bufferedByteCount: Int { buffer.count - readIndex }
    /// Stream offset of the first byte not yet consumed by a returned frame.
    public var consumedOffset: Int { bufferStreamOffset + readIndex }

    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        compactIfWorthwhile()
        buffer.append(contentsOf: bytes)
    }

    public mutating func append(_ bytes: some Sequence<UInt8>) {
        compactIfWorthwhile()
        buffer.append(contentsOf: bytes)
    }

    /// Returns the next complete frame body, nil if more bytes are needed, or throws if the
    /// header just read is unacceptable (the stream cannot be resynchronised after that).
    public mutating func nextFrame() throws(FrameError) -> ArraySlice<UInt8>? {
        guard buffer.count - readIndex >= Self.headerLength else { return nil }
        let length = Int(buffer[readIndex]) << 24 | Int(buffer[readIndex + 1]) << 16
            | Int(buffer[readIndex + 2]) << 8 | Int(buffer[readIndex + 3])
        if length == 0 { throw .zeroLength }
        if length > maximumFrameLength { throw .tooLong(length: length, maximum: maximumFrameLength) }
        let bodyStart = readIndex + Self.headerLength
        guard buffer.count - bodyStart >= length else { return nil }
        readIndex = bodyStart + length
        return buffer[bodyStart..<readIndex]
    }

    /// Call at end of stream: throws if the stream stopped inside a frame.
    public func finish() throws(FrameError) {
        if let unfinished = unfinishedFrame { throw unfinished }
    }

    /// What has arrived of a frame still incomplete (as the error the stream would end with
    /// now), nil when no frame has begun. Meaningful once complete frames have been taken out.
    public var unfinishedFrame: FrameError? {
        let pending = buffer.count - readIndex
        if pending == 0 { return nil }
        if pending < Self.headerLength { return .truncatedHeader(received: pending) }
        let length = Int(buffer[readIndex]) << 24 | Int(buffer[readIndex + 1]) << 16
            | Int(buffer[readIndex + 2]) << 8 | Int(buffer[readIndex + 3])
        return .truncatedBody(expected: length, received: pending - Self.headerLength)
    }

    private mutating func compactIfWorthwhile() {
        if readIndex == buffer.count {
            bufferStreamOffset += readIndex
            buffer.removeAll(keepingCapacity: buffer.capacity <= 1 << 20)
            readIndex = 0
        } else if readIndex > 64 * 1024 && readIndex * 2 > buffer.count {
            bufferStreamOffset += readIndex
            buffer.removeSubrange(0..<readIndex)
            readIndex = 0
        }
    }
}

/// Frame encoding: the inverse of `FrameDecoder`.
public enum FrameEncoder {
    /// Appends the 4-byte big-endian header for a body of `length` bytes.
    public static func appendHeader(length: Int, to out: inout [UInt8]) {
        out.append(UInt8(truncatingIfNeeded: length >> 24))
        out.append(UInt8(truncatingIfNeeded: length >> 16))
        out.append(UInt8(truncatingIfNeeded: length >> 8))
        out.append(UInt8(truncatingIfNeeded: length))
    }

    /// Header and body as one buffer, ready to write.
    public static func frame(_ body: some Collection<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(body.count + FrameDecoder.headerLength)
        appendHeader(length: body.count, to: &out)
        out.append(contentsOf: body)
        return out
    }
}
