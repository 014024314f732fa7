import Glibc

/// Wraps a child's command line in `setpriv --pdeathsig KILL`, so that a receiver that is killed
/// leaves no player or window behind. The signal is tied to the spawning thread: children are
/// started on the event loop's, which lives as long as the receiver. Without setpriv the command
/// runs as it is.
enum OrphanGuard {
    static let setpriv = "/usr/bin/setpriv"

    /// The executable and arguments to spawn for `executable arguments`.
    static func wrap(_ executable: String, _ arguments: [String]) -> (executable: String, arguments: [String]) {
        access(setpriv, X_OK) == 0 ? (setpriv, ["--pdeathsig", "KILL", "--", executable] + arguments) : (executable, arguments)
    }
}
