import Glibc

/// A file a stream is recorded into. Writing stops at the first failure (a full disk) or at
/// `limit` bytes, and says why once: a recording never takes the receiver down with it.
final class RecordingFile {
    let path: String
    private let fd: Int32
    private let limit: Int
    private(set) var written = 0
    /// Why writing stopped, once it has.
    private(set) var stopped: String?

    init(path: String, limit: Int = .max) throws(ReceiverError) {
        self.path = path
        self.limit = limit
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw ReceiverError("cannot record to \(path): \(String(cString: strerror(errno)))") }
    }

    deinit { close(fd) }

    /// Appends `bytes` whole, or stops the recording; false once it has stopped.
    @discardableResult
    func append(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard stopped == nil else { return false }
        guard written + bytes.count <= limit else {
            stop("it reached its \(limit)-byte limit")
            return false
        }
        var offset = 0
        while offset < bytes.count {
            let n = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                stop(String(cString: strerror(errno)))
                return false
            }
            offset += n
        }
        written += bytes.count
        return true
    }

    /// Writes `bytes` at `offset` (a header to fix up); ignored once stopped by an error.
    func write(_ bytes: [UInt8], at offset: Int) {
        _ = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(offset)) }
    }

    private func stop(_ reason: String) {
        stopped = reason
        say("recording \(path) stopped: \(reason)")
    }
}
