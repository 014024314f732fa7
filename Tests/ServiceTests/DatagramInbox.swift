import Foundation
import Glibc
import Synchronization

/// A Unix datagram socket the test owns, standing in for systemd's notify socket or journald's
/// native socket: a thread of its own receives every datagram, stamped with when it came.
/// `close()` stops the thread (it is waited for) and removes the socket's file.
final class DatagramInbox: Sendable {
    struct Datagram: Sendable {
        let at: ContinuousClock.Instant
        let bytes: [UInt8]
        var text: String { String(decoding: bytes, as: UTF8.self) }
    }

    /// The socket's name as `NOTIFY_SOCKET` gives it: a path, or `@name` in the abstract namespace.
    let name: String
    private let fd: Int32
    private let received = Mutex<[Datagram]>([])
    private let stopping = Atomic<Bool>(false)
    private let ended = DispatchSemaphore(value: 0)

    /// Binds `name` (a path, or `@name`).
    init(name: String) throws {
        self.name = name
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw InboxError("socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(name.utf8)
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }
        withUnsafeMutableBytes(of: &address.sun_path) { path in for (i, byte) in bytes.enumerated() { path[i] = byte } }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        guard bound == 0 else {
            let reason = String(cString: strerror(errno))
            Glibc.close(fd)
            throw InboxError("bind \(name): \(reason)")
        }
        // Room for what a daemon sends while the test looks elsewhere.
        var size: Int32 = 4 << 20
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        Thread.detachNewThread { [self] in receive() }
    }

    private func receive() {
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while !stopping.load(ordering: .acquiring) {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 50) > 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count > 0 {
                let datagram = Datagram(at: .now, bytes: Array(buffer[0..<count]))
                received.withLock { $0.append(datagram) }
            }
        }
        ended.signal()
    }

    var all: [Datagram] { received.withLock { $0 } }

    /// The datagrams whose text contains the line `line` (e.g. `WATCHDOG=1`).
    func with(line: String) -> [Datagram] { all.filter { $0.text.split(separator: "\n").contains { $0 == line } } }

    func close() {
        stopping.store(true, ordering: .releasing)
        ended.wait()
        Glibc.close(fd)
        if !name.hasPrefix("@") { unlink(name) }
    }
}

struct InboxError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
