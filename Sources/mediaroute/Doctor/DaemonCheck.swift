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

    func run() async -> (Diagnosis, Answer?) {
        let path = socket ?? SocketLocation.defaultPath
        let fix = "start it (`mediarouted --drivers-dir DIR`), or name its socket: the CLI looks at \(Self.lookup)"
        do {
            close(try UnixSocket.connect(path: path))
        } catch {
            return (Diagnosis("daemon", "mediarouted", .problem, "mediarouted does not answer: nothing listens on \(path) (\(error.errno.description))", fix: fix), nil)
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
}
