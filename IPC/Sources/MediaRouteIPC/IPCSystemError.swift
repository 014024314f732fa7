import Glibc
import SystemPackage

/// A system call failed; carries the call and errno so the sentence says what and why.
public struct IPCSystemError: Error, Sendable, Equatable, CustomStringConvertible {
    public let call: String
    public let errno: Errno

    public init(_ call: String, errno: Int32 = Glibc.errno) {
        self.call = call
        self.errno = Errno(rawValue: errno)
    }

    public var description: String { "\(call) failed: \(errno.description) (errno \(errno.rawValue))" }
}
