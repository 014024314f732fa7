import Foundation
import Glibc

extension JSONWriter {
    /// Writes `value` (and a newline) to `path` so that a crash leaves the old file or the new one,
    /// never half of either: a 0600 temporary file, fsync, rename, fsync of the directory. For state
    /// files: operator decisions, pairing tokens.
    public static func write(_ value: JSONValue, atomicallyTo path: String) throws(IPCSystemError) {
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw IPCSystemError("open \(temporary)") }
        let bytes = encode(value) + [0x0A]
        let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd)
        close(fd)
        guard written == bytes.count, synced == 0 else { throw IPCSystemError("write \(temporary)") }
        guard rename(temporary, path) == 0 else { throw IPCSystemError("rename \(temporary)") }
        let directory = open((path as NSString).deletingLastPathComponent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directory >= 0 {
            fsync(directory)
            close(directory)
        }
    }
}
