import CLinuxHelpers
import Foundation
import MediaRouteIPC

/// A short helper program (busctl, a check script) run to its end for what it prints, bounded in
/// time: one that hangs is killed by its PID when the time is up instead of hanging the caller.
public struct CapturedCommand: Sendable {
    /// How it ended, and its standard output and error interleaved as printed.
    public let termination: ChildProcess.Termination
    public let output: String
    /// True if it was killed because `timeout` passed.
    public let timedOut: Bool

    public var succeeded: Bool { termination == .exited(0) && !timedOut }

    /// Runs `executable` with `arguments` (`environment` adds to ours) and waits for its end, at
    /// most `timeout`. Blocking work, so on a thread of its own.
    public static func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:],
                           timeout: Duration) async throws -> CapturedCommand {
        try await onThreadOfItsOwn { try runBlocking(executable, arguments, environment, timeout) }
    }

    private static func runBlocking(_ executable: String, _ arguments: [String], _ extra: [String: String], _ timeout: Duration) throws -> CapturedCommand {
        var ends: [Int32] = [-1, -1]
        guard clh_pipe_cloexec(&ends) == 0 else { throw PrivateDaemonError("cannot make a pipe to read \(executable): errno \(errno)") }
        let devNull = open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer { close(devNull) }
        let environment = ProcessInfo.processInfo.environment.merging(extra) { _, new in new }.map { "\($0.key)=\($0.value)" }
        let child: ChildProcess
        do {
            child = try ChildProcess(executable: executable, arguments: arguments, environment: environment,
                                     standardInput: devNull, standardOutput: ends[1], standardError: ends[1])
        } catch {
            close(ends[0])
            close(ends[1])
            throw PrivateDaemonError("cannot start \(executable): \(error)")
        }
        close(ends[1])
        defer { close(ends[0]) }
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        let deadline = ContinuousClock.now + timeout
        var timedOut = false
        // Read until EOF (the program and anything it started closed the pipe) or the deadline.
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else {
                timedOut = true
                break
            }
            var ready = pollfd(fd: ends[0], events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(clamping: left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1)
            let polled = poll(&ready, 1, milliseconds)
            if polled < 0 && errno == EINTR { continue }
            guard polled > 0 else { continue }
            let count = read(ends[0], &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            output += buffer[0..<count]
        }
        if timedOut { child.signal(SIGKILL) }
        return CapturedCommand(termination: child.waitForExit(), output: String(decoding: output, as: UTF8.self), timedOut: timedOut)
    }
}
