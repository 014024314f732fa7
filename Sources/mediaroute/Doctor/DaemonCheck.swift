import Foundation
import MediaRouteIPC
import MediaRouteWire

/// Does mediarouted answer on its socket? If so, what it says of itself, its drivers and routes,
/// for the other checks.
struct DaemonCheck {
    struct Answer {
        let client: DaemonClient
        let status: Control.Status.Report
    }

    let socket: String?

    /// Where the socket is looked for, in the order the CLI looks.
    static let lookup = "--socket, else $MEDIAROUTE_SOCKET, else $XDG_RUNTIME_DIR/mediaroute/mediarouted.sock (as root /run/mediaroute/mediarouted.sock)"

    /// The system daemon's socket (its unit's RuntimeDirectory, mode 0700, there while it runs).
    static let systemSocket = "/run/mediaroute/mediarouted.sock"

    func run() async -> (Diagnosis, Answer?) {
        let path = socket ?? SocketLocation.defaultPath
        let fix = "start it (`mediarouted --drivers-dir DIR`), or name its socket: the CLI looks at \(Self.lookup)"
        do {
            close(try UnixSocket.connect(path: path))
        } catch {
            switch error.errno {
            case .permissionDenied, .notPermitted:
                return (Diagnosis("daemon", "mediarouted", .problem,
                                  "mediarouted's socket \(path) is closed to this user (uid \(getuid())): permission denied (\(error.errno.description))",
                                  fix: "run it with sudo (`sudo mediaroute doctor`), or as the user the daemon runs as"), nil)
            case .noSuchFileOrDirectory, .connectionRefused:
                if let system = systemDaemon(instead: path) { return (system, nil) }
                return (Diagnosis("daemon", "mediarouted", .problem, "mediarouted does not answer: nothing listens on \(path) (\(error.errno.description))", fix: fix), nil)
            default:
                return (Diagnosis("daemon", "mediarouted", .problem, "mediarouted cannot be reached on \(path): \(error.errno.description)", fix: fix), nil)
            }
        }
        let client: DaemonClient
        do {
            client = try await DaemonClient.connect(socket: socket)
        } catch {
            return (Diagnosis("daemon", "mediarouted", .problem, "\(error)", fix: fix), nil)
        }
        do {
            let status = try await client.call(Control.Status(), timeout: .seconds(5))
            return (Diagnosis("daemon", "mediarouted", .ok, "mediarouted (pid \(status.pid)) answers on \(status.socket), up \(duration(status.uptimeSeconds))"),
                    Answer(client: client, status: status))
        } catch {
            await client.close()
            return (Diagnosis("daemon", "mediarouted", .problem, "mediarouted accepted a connection on \(path) but did not answer `status` within 5 s: \(error)",
                              fix: "look at its log; if it stays wedged, restart it (SIGTERM stops its drivers first)"), nil)
        }
    }
    /// A user's CLI looks at their own `$XDG_RUNTIME_DIR` socket; when that is absent but the
    /// system daemon's runtime directory is there, the daemon they mean is probably that one.
    private func systemDaemon(instead path: String) -> Diagnosis? {
        guard socket == nil, getuid() != 0, path != Self.systemSocket, (getenv("MEDIAROUTE_SOCKET").map { String(cString: $0).isEmpty } ?? true) else {
            return nil
        }
        var info = stat()
        let seen: String
        if stat(Self.systemSocket, &info) == 0 {
            seen = "\(Self.systemSocket) exists"
        } else if errno == EACCES {
            seen = "its runtime directory \((Self.systemSocket as NSString).deletingLastPathComponent) exists (closed to this user)"
        } else {
            return nil
        }
        return Diagnosis("daemon", "mediarouted", .problem,
                         "nothing listens on \(path), this user's socket; the system daemon runs: \(seen)",
                         fix: "ask it as root: `sudo mediaroute doctor`; or name its socket: `mediaroute --socket \(Self.systemSocket) doctor` (as a user allowed to reach it)")
    }
}
