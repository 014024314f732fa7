import CLinuxHelpers
import Foundation
import Glibc

/// What a process the supervisor started (a driver, a NowPlaying extension) does before its
/// handshake: find its socket at descriptor 3, send stray prints to the supervisor's log, and die
/// with the supervisor even if it was killed with SIGKILL.
public enum SupervisorChannel {
    /// The checked socket; a program not started by mediarouted (or whose supervisor is already
    /// gone) leaves with a sentence saying so, as `kind` ("driver", "NowPlaying extension").
    public static func adopt(as kind: String) -> Int32 {
        // Standard output is not the channel (descriptor 3 is), but a stray print must still land
        // somewhere visible: the supervisor logs our stderr under our name.
        dup2(STDERR_FILENO, STDOUT_FILENO)
        clh_line_buffer_stdout()
        let socket = ChildProcess.socketDescriptor
        var status = stat()
        guard fstat(socket, &status) == 0, status.st_mode & S_IFMT == S_IFSOCK else {
            leave(kind, "this program is a MediaRoute \(kind): mediarouted starts it with its socket as descriptor 3")
        }
        _ = clh_set_parent_death_signal(SIGTERM)
        if let expected = ProcessInfo.processInfo.environment["MEDIAROUTE_SUPERVISOR_PID"].flatMap(Int32.init), getppid() != expected {
            leave(kind, "the supervisor (pid \(expected)) is gone")
        }
        return socket
    }

    /// Says why on standard error (the supervisor's log) and exits 70 (EX_SOFTWARE).
    public static func leave(_ kind: String, _ message: String) -> Never {
        FileHandle.standardError.write(Data("\(kind): \(message)\n".utf8))
        exit(70)
    }
}
