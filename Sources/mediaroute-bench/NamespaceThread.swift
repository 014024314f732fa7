import CLinuxHelpers
import Foundation
import Glibc

/// Blocking work on a thread of its own inside a network namespace: the raw baselines talk to
/// the renderers on a private LAN the way a plain C control point would, from where our driver
/// runs. (A namespace is per thread; the thread ends with the work.)
enum NamespaceThread {
    static func run<T: Sendable>(in namespace: String, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                let fd = open("/run/netns/\(namespace)", O_RDONLY | O_CLOEXEC)
                defer { if fd >= 0 { close(fd) } }
                guard fd >= 0, clh_enter_network_namespace(fd) == 0 else {
                    return continuation.resume(throwing: BenchmarkError("cannot enter network namespace \(namespace): \(String(cString: strerror(errno)))"))
                }
                continuation.resume(with: Result { try body() })
            }
            thread.start()
        }
    }
}
