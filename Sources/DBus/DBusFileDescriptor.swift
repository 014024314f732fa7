import Glibc
import Synchronization

/// A Unix file descriptor travelling in a message. It owns the descriptor: closed when released
/// unless `take()` handed it to someone, so one received and never used does not leak.
public final class DBusFileDescriptor: Sendable {
    private let descriptor: Mutex<Int32?>

    public init(taking fd: Int32) { descriptor = Mutex(fd) }

    /// Gives up ownership: the caller closes it. nil if already taken.
    public func take() -> Int32? { descriptor.withLock { fd in defer { fd = nil }; return fd } }

    /// The descriptor while still owned here (for sending: libdbus duplicates it).
    var borrowed: Int32? { descriptor.withLock { $0 } }

    deinit { if let fd = descriptor.withLock({ $0 }) { close(fd) } }
}
