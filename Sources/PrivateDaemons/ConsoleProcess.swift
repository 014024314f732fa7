import CLinuxHelpers
import Foundation
import MediaRouteIPC

/// A program driven through its console: lines typed on its standard input, and what it printed
/// (standard output and error, into a log file that survives restarts). Stopped by PID.
public final class ConsoleProcess: @unchecked Sendable {
    public let executable: String
    public let logPath: String
    public private(set) var process: ChildProcess
    private var input: Int32
    private let arguments: [String]
    private let environment: [String: String]

    /// Starts `executable`; `environment` adds to (and overrides) this process's environment.
    public init(_ executable: String, _ arguments: [String], environment: [String: String] = [:], logPath: String) throws {
        self.executable = executable
        self.arguments = arguments
        self.environment = environment
        self.logPath = logPath
        (process, input) = try Self.spawn(executable, arguments, environment, logPath)
    }

    private static func spawn(_ executable: String, _ arguments: [String], _ extra: [String: String], _ logPath: String) throws -> (ChildProcess, Int32) {
        let log = open(logPath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard log >= 0 else { throw PrivateDaemonError("cannot write \(logPath): \(String(cString: strerror(errno)))") }
        var ends: [Int32] = [-1, -1]
        guard clh_pipe_cloexec(&ends) == 0 else {
            close(log)
            throw PrivateDaemonError("cannot make a pipe for \(executable)'s console")
        }
        defer { close(log); close(ends[0]) }
        let environment = ProcessInfo.processInfo.environment.merging(extra) { _, new in new }
        do {
            let process = try ChildProcess(executable: executable, arguments: arguments, environment: environment.map { "\($0.key)=\($0.value)" },
                                           standardInput: ends[0], standardOutput: log, standardError: log)
            return (process, ends[1])
        } catch {
            close(ends[1])
            throw error
        }
    }

    /// Everything it printed, across restarts.
    public var output: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Where the output ends now: pass it to `waitFor(_:after:)` to wait only for what comes next.
    public var mark: Int { output.utf8.count }

    /// What it printed after `mark`.
    public func output(after mark: Int) -> String { String(decoding: output.utf8.dropFirst(mark), as: UTF8.self) }

    /// Waits until it prints `text` (after `mark`, if given); the error shows what it did print.
    public func waitFor(_ text: String, after mark: Int = 0, seconds: Double = 20) async throws {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            if output(after: mark).contains(text) { return }
            if let ended = process.exitIfEnded() {
                throw PrivateDaemonError("\((executable as NSString).lastPathComponent) \(ended) before printing \"\(text)\"; it printed:\n\(output)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw PrivateDaemonError("\((executable as NSString).lastPathComponent) did not print \"\(text)\" within \(seconds) s; it printed:\n\(output)")
    }

    /// The last line it printed (after `mark`) that starts with `prefix`.
    public func lastLine(startingWith prefix: String, after mark: Int = 0) -> String? {
        output(after: mark).split(separator: "\n").last { $0.hasPrefix(prefix) }.map(String.init)
    }

    /// Types a line on its console.
    public func type(_ line: String) { _ = (line + "\n").withCString { write(input, $0, strlen($0)) } }

    /// Ends its input, as Ctrl-D would.
    public func endInput() {
        if input >= 0 { close(input) }
        input = -1
    }

    /// Stops it by PID: SIGTERM, then SIGKILL if it is still there after `grace`.
    public func stop(grace: Duration = .seconds(5)) async {
        endInput()
        await process.terminate(grace: grace)
    }

    /// Kills it at once, as a power cut would.
    public func kill9() async {
        kill(process.pid, SIGKILL)
        _ = await process.exitStatus()
    }

    /// Starts it again, as it was started (after `stop` or `kill9`); its log goes on.
    public func restart() throws {
        endInput()
        (process, input) = try Self.spawn(executable, arguments, environment, logPath)
    }
}
