import CLinuxHelpers
import Foundation
import MediaRouteIPC

/// A private X server for one test or benchmark: `Xvfb` (a virtual framebuffer, no hardware) on a
/// display number it picks itself among the free ones (`-displayfd`), started in the foreground
/// so we own its PID, stopped by that PID. Never the machine's own display.
public final class PrivateXServer: @unchecked Sendable {  // changes only in init and stop, called by one task at a time
    /// `:N`, for `DISPLAY` or `--display`.
    public let display: String
    public let width: Int
    public let height: Int
    private let process: ChildProcess
    private var stopped = false

    /// Starts Xvfb with one `width`x`height` 24-bit screen; returns once it takes connections.
    public init(width: Int = 640, height: Int = 480) throws {
        var ends: [Int32] = [-1, -1]
        guard clh_pipe_cloexec(&ends) == 0 else { throw PrivateDaemonError("cannot make a pipe for Xvfb: errno \(errno)") }
        let devNull = open("/dev/null", O_WRONLY | O_CLOEXEC)
        defer { close(devNull) }
        let process: ChildProcess
        do {
            // The pipe's write end becomes the server's descriptor 3: it writes its display number there once ready.
            process = try ChildProcess(executable: "/usr/bin/Xvfb",
                                       arguments: ["-displayfd", "3", "-screen", "0", "\(width)x\(height)x24", "-nolisten", "tcp", "-noreset"],
                                       socket: ends[1], standardOutput: devNull, standardError: devNull)
        } catch {
            ends.forEach { close($0) }
            throw PrivateDaemonError("cannot start /usr/bin/Xvfb (the xvfb package): \(error)")
        }
        close(ends[1])
        defer { close(ends[0]) }
        guard let number = Self.readLine(from: ends[0], within: 10_000).flatMap({ Int($0) }) else {
            kill(process.pid, SIGTERM)
            _ = process.waitForExit()
            throw PrivateDaemonError("Xvfb did not say which display it took within 10 s")
        }
        (self.process, self.display, self.width, self.height) = (process, ":\(number)", width, height)
    }

    /// `init` from async code: waiting for the server blocks.
    public static func start(width: Int = 640, height: Int = 480) async throws -> PrivateXServer {
        try await onThreadOfItsOwn { try PrivateXServer(width: width, height: height) }
    }

    public var pid: Int32 { process.pid }

    /// The line `fd` gives before its end, if it comes within `milliseconds`.
    private static func readLine(from fd: Int32, within milliseconds: Int) -> String? {
        let deadline = Date().addingTimeInterval(Double(milliseconds) / 1000)
        var line: [UInt8] = []
        while true {
            var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, Int32(max(0, deadline.timeIntervalSinceNow * 1000))) > 0 else { return nil }
            var byte: UInt8 = 0
            guard read(fd, &byte, 1) == 1 else { return nil }
            if byte == UInt8(ascii: "\n") { return String(decoding: line, as: UTF8.self) }
            line.append(byte)
        }
    }

    /// Stops the server by PID (it removes its socket and lock file). Safe to call twice.
    public func stop() {
        guard !stopped else { return }
        stopped = true
        kill(process.pid, SIGTERM)
        _ = process.waitForExit()
    }

    /// `stop` from async code.
    public func stopFromTask() async {
        _ = try? await onThreadOfItsOwn { self.stop() }
    }

    deinit { stop() }
}
