import Foundation
import Glibc
import Testing
import TestSupport
import UPnP

/// The process's peak memory while one large file is served: measured alone (`make test` runs
/// this suite in its serial phase), since tests running beside it in the process grew the peak by
/// up to 91 MiB of their own.
@Suite("MediaServer: memory while serving a large file", .timeLimit(.minutes(2)))
struct MediaServerMemoryTests {
    @Test func servesALargeFileInBoundedMemory() async throws {
        try await withMediaServer { media, base, directory in
            let size: Int64 = 256 << 20
            let file = directory + "/large.mkv"
            let fd = open(file, O_CREAT | O_WRONLY | O_CLOEXEC, 0o600)
            try #require(fd >= 0)
            try #require(ftruncate(fd, off_t(size)) == 0)  // sparse: no disk used
            close(fd)
            let path = media.publish(file: file, mimeType: "video/x-matroska", for: "127.0.0.1")
            resetPeakResidentBytes()
            let peakBefore = peakResidentBytes()
            let started = ContinuousClock.now
            // 256 MiB: on a machine loaded by the whole suite it has taken over 20 s.
            let got = try await curl([base + path], in: directory, write: "%{size_download}", keepBody: false, seconds: 90)
            let elapsed = ContinuousClock.now - started
            let growth = peakResidentBytes() - peakBefore
            #expect(got.status == 200)
            #expect(got.written == String(size))
            // The count grows when each write completes on our side, which may be just after
            // curl has read the last byte.
            try await waitUntil("every byte counted") { media.statistics(for: path).bytes == size }
            #expect(growth < 64 << 20, "peak memory grew by \(growth >> 20) MiB serving a \(size >> 20) MiB file")
            print("MediaServer: \(size >> 20) MiB file served in \(elapsed), peak memory +\(growth >> 20) MiB")
        }
    }
}
