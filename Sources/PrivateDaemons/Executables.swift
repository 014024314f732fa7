import Foundation
import Glibc

/// Where this program and the ones built beside it are: the demo, the benchmarks and the tests
/// start MediaRoute's other programs from the same build directory.
public enum Executables {
    /// This program's own path.
    public static var current: String {
        var path = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &path, path.count - 1)
        return String(decoding: path[0..<max(n, 0)].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The directory this program is in.
    public static var directory: String { (current as NSString).deletingLastPathComponent }

    /// The program `name` built beside this one.
    public static func sibling(_ name: String) -> String { directory + "/" + name }
}
