import Glibc
import NIOPosix
import Synchronization

/// A published file opened for one response: its size when opened, and its bytes read in chunks
/// on NIO's thread pool (never on the event loop or the cooperative pool), one chunk per pull, so a
/// file of any size is served in bounded memory. The descriptor is closed when the last reference
/// (the response's stream) goes.
final class MediaFile: Sendable {
    /// Why a published file cannot be served.
    enum OpenError: Error {
        case missing
        case unreadable(String)
    }

    static let chunkSize = 64 << 10

    let size: Int64
    private let descriptor: Int32
    private let path: String
    /// The next offset to read and the end of the range being served.
    private let window = Mutex<(next: Int64, end: Int64)>((0, 0))

    private init(descriptor: Int32, size: Int64, path: String) {
        self.descriptor = descriptor
        self.size = size
        self.path = path
    }

    deinit { close(descriptor) }

    static func open(_ path: String) async throws(OpenError) -> MediaFile {
        let opened: Result<MediaFile, OpenError>
        do {
            opened = try await NIOThreadPool.singleton.runIfActive { Self.openNow(path) }
        } catch {
            throw .unreadable("the file reader is shut down")
        }
        return try opened.get()
    }

    private static func openNow(_ path: String) -> Result<MediaFile, OpenError> {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            return .failure(errno == ENOENT || errno == ENOTDIR ? .missing : .unreadable(String(cString: strerror(errno))))
        }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            return .failure(.unreadable(reason))
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            return .failure(.unreadable("it is not a regular file"))
        }
        return .success(MediaFile(descriptor: fd, size: Int64(info.st_size), path: path))
    }

    /// The bytes `first...last`, pulled a chunk at a time. Call once per opened file.
    func chunks(first: Int64, last: Int64) -> AsyncThrowingStream<[UInt8], any Error> {
        window.withLock { $0 = (first, last + 1) }
        return AsyncThrowingStream(unfolding: { try await self.nextChunk() })
    }

    private func nextChunk() async throws -> [UInt8]? {
        let (offset, end) = window.withLock { ($0.next, $0.end) }
        guard offset < end else { return nil }
        try Task.checkCancellation()
        let count = Int(min(Int64(Self.chunkSize), end - offset))
        let chunk = try await NIOThreadPool.singleton.runIfActive { try self.read(count, at: offset) }
        window.withLock { $0.next += Int64(chunk.count) }
        return chunk
    }

    private func read(_ count: Int, at offset: Int64) throws(MediaFileReadError) -> [UInt8] {
        var failure: Int32 = 0
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            var n: Int
            repeat { n = pread(descriptor, buffer.baseAddress, count, off_t(offset)) } while n < 0 && errno == EINTR
            if n < 0 { failure = errno }
            initialized = max(n, 0)
        }
        if failure != 0 { throw MediaFileReadError(description: "Reading \(path) at byte \(offset) failed: \(String(cString: strerror(failure)))") }
        if bytes.isEmpty { throw MediaFileReadError(description: "\(path) ended at byte \(offset), before its published size: it was truncated") }
        return bytes
    }
}

/// A published file that could not be read to the end of the response (its answer is cut short).
struct MediaFileReadError: Error, CustomStringConvertible {
    let description: String
}
