import Foundation
import Glibc

/// How many descriptors of this process refer to the file with `inode`: exact even while other
/// tests open and close descriptors in parallel.
public func descriptorsWithInode(_ inode: ino_t) -> Int {
    guard let dir = opendir("/proc/self/fd") else { return -1 }
    defer { closedir(dir) }
    var count = 0
    while let entry = readdir(dir) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        guard let fd = Int32(name) else { continue }
        var status = stat()
        if fstat(fd, &status) == 0 && status.st_ino == inode { count += 1 }
    }
    return count
}
