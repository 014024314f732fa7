import Foundation
import Glibc

/// A file as the kernel knows it: device and inode. Both are needed, because an inode number is only
/// unique on its own file system (a shared library on disk can share it with a memfd, and did, in CI).
public struct FileIdentity: Equatable, Sendable {
    public let device: UInt64
    public let inode: UInt64

    /// The file open at `fd`, or nil if nothing is.
    public init?(descriptor fd: Int32) {
        var status = stat()
        guard fstat(fd, &status) == 0 else { return nil }
        device = UInt64(status.st_dev)
        inode = UInt64(status.st_ino)
    }

    /// How many descriptors of this process refer to this file: exact even while other tests open
    /// and close descriptors in parallel.
    public var descriptorCount: Int {
        guard let dir = opendir("/proc/self/fd") else { return -1 }
        defer { closedir(dir) }
        var count = 0
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if let fd = Int32(name), FileIdentity(descriptor: fd) == self { count += 1 }
        }
        return count
    }

    /// How many mappings of this file the process has (lines of /proc/self/maps: "address perms
    /// offset major:minor inode path", the device in hex).
    public var mappingCount: Int {
        // Linux's dev_t encoding: 12 bits of major and 20 of minor, split around the low byte.
        let major = ((device >> 8) & 0xfff) | ((device >> 32) & ~0xfff)
        let minor = (device & 0xff) | ((device >> 12) & ~0xff)
        let wanted = [String(format: "%02x:%02x", major, minor), String(inode)].map { Substring($0) }
        return procFileText("/proc/self/maps").split(separator: "\n")
            .filter { Array($0.split(separator: " ", omittingEmptySubsequences: true).dropFirst(3).prefix(2)) == wanted }.count
    }
}

/// A /proc file, read to its end (they report a size of 0, so reading "the whole file" reads nothing).
public func procFileText(_ path: String) -> String {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return "" }
    defer { close(fd) }
    var bytes: [UInt8] = [], buffer = [UInt8](repeating: 0, count: 65536)
    while case let n = read(fd, &buffer, buffer.count), n > 0 { bytes += buffer[0..<n] }
    return String(decoding: bytes, as: UTF8.self)
}
