import Foundation
import MediaRouteIPC

/// Ctrl-C as something the CLI waits for, instead of a signal that kills it mid-request (a pairing
/// left half done, a picker left open).
final class Interrupt: Sendable {
    private let pipe: SignalPipe

    init() throws(CLIError) {
        do {
            pipe = try SignalPipe([SIGINT])
        } catch {
            throw CLIError("cannot watch for Ctrl-C: \(error)")
        }
    }

    /// Ctrl-C ends the process again.
    func restore() { pipe.restore() }

    /// Returns true once Ctrl-C is pressed; false if the wait was cancelled.
    func wait() async -> Bool { await pipe.next() != nil }

    /// One line typed at the terminal, or nil if Ctrl-C came first (or input ended). Reads with
    /// read(2), not stdio: a thread blocked in `readLine` holds the stdin lock, and exiting would wait for it.
    func readLine() async -> String? {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: self.readLineBlocking()) }
        }
    }

    private func readLineBlocking() -> String? {
        var line: [UInt8] = []
        var descriptors = [pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0), pollfd(fd: pipe.fd, events: Int16(POLLIN), revents: 0)]
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
