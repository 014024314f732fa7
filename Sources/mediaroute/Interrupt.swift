import CLinuxHelpers
import Foundation

/// Ctrl-C as something the CLI waits for, instead of a signal that kills it mid-request (a pairing
/// left half done, a picker left open).
///
/// The handler is installed before `init` returns. A Dispatch signal source registers its handler
/// asynchronously after `resume()`, so a Ctrl-C typed the moment a prompt appeared could be lost.
final class Interrupt: Sendable {
    /// Readable once Ctrl-C was pressed.
    let fd: Int32
    private let writeEnd: Int32

    init() {
        var ends: [Int32] = [-1, -1]
        if clh_pipe_cloexec(&ends) != 0 { ends = [-1, -1] }
        fd = ends[0]
        writeEnd = ends[1]
        _ = fcntl(writeEnd, F_SETFL, O_NONBLOCK)
        _ = clh_signal_to_pipe(SIGINT, writeEnd)
    }

    /// Ctrl-C ends the process again.
    func restore() {
        signal(SIGINT, SIG_DFL)
        close(fd)
        close(writeEnd)
    }

    /// Returns once Ctrl-C is pressed (the wait runs on a thread of its own, not a cooperative one).
    func wait() async {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                var descriptor = pollfd(fd: self.fd, events: Int16(POLLIN), revents: 0)
                while poll(&descriptor, 1, -1) < 0 && errno == EINTR {}
                continuation.resume()
            }
        }
    }

    /// One line typed at the terminal, or nil if Ctrl-C came first (or input ended). Reads with
    /// read(2), not stdio: a thread blocked in `readLine` holds the stdin lock, and exiting would wait for it.
    func readLine() async -> String? {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: self.readLineBlocking()) }
        }
    }

    private func readLineBlocking() -> String? {
        var line: [UInt8] = []
        var descriptors = [pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0), pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
        while line.count <= 1024 {
            guard poll(&descriptors, 2, -1) >= 0 else {
                if errno == EINTR { continue }
                return nil
            }
            if descriptors[1].revents != 0 { return nil }
            var byte: UInt8 = 0
            guard read(STDIN_FILENO, &byte, 1) == 1 else { break }
            if byte == 0x0A { return String(decoding: line, as: UTF8.self) }
            if byte != 0x0D { line.append(byte) }
        }
        return line.isEmpty ? nil : String(decoding: line, as: UTF8.self)
    }
}
