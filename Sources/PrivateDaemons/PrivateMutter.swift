import Foundation
import MediaRouteIPC

/// A headless GNOME compositor for one test: mutter with one virtual monitor, drawing in software
/// (no GPU), with Xwayland beside it, on a private session bus with its own PipeWire and WirePlumber
/// (mutter's screencasts are PipeWire nodes; `IsolatedPipeWireConfiguration`: no device monitors,
/// no Bluetooth, no bus). No system bus: its address names a dead socket (`PrivateSession`); headless
/// mutter needs no logind, and what it asks there (org.freedesktop.locale1 for keyboard layouts,
/// colord) it warns about and goes without. Everything runs with a private runtime directory and
/// home, is started by PID and stopped by PID; `stop` removes the directory.
public final class PrivateMutter: Sendable {
    private let session: PrivateSession
    /// Xwayland's display (`:N`) and the Xauthority file X clients need to connect to it.
    public let xDisplay: String
    public let xAuthority: String
    /// The name of mutter's virtual monitor, for `RecordMonitor`.
    public let monitor = "Meta-0"

    public var directory: URL { session.directory }
    public var bus: PrivateBus { session.bus }
    /// PipeWire's socket, for a consumer of mutter's screencast nodes.
    public var pipeWireSocket: String { directory.appendingPathComponent("pipewire-0").path }
    /// The PIDs of PipeWire, WirePlumber and mutter (Xwayland is mutter's child).
    public var pids: [Int32] { session.pids }
    /// What the compositor and its daemons printed, for a failing test's message.
    public var logs: String { session.logs }

    private init(session: PrivateSession, xDisplay: String, xAuthority: String) {
        (self.session, self.xDisplay, self.xAuthority) = (session, xDisplay, xAuthority)
    }

    /// Starts the bus, PipeWire, WirePlumber and mutter with a `width` x `height` virtual monitor;
    /// returns once mutter's ScreenCast API is on the bus and Xwayland's display is known.
    public static func start(width: Int = 640, height: Int = 480) async throws -> PrivateMutter {
        let session = try await PrivateSession(directory: FileManager.default.temporaryDirectory.appendingPathComponent("mediaroute-mutter-\(UUID().uuidString.prefix(8))"))
        do {
            let directory = session.directory
            // The runtime directory: its owner's alone, as a login session's is.
            try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: directory.path)
            let environment = session.environment(runtime: directory, home: directory.appendingPathComponent("home"))
            // PipeWire's graph holds the screencasts alone: no sound card, camera or Bluetooth.
            let pipeWire = IsolatedPipeWireConfiguration(directory: directory.appendingPathComponent("pipewire-config").path, nullSink: nil)
            try pipeWire.write()
            try session.launch("/usr/bin/pipewire", [], environment: environment.merging(pipeWire.serverEnvironment(deadSocket: session.deadSocket)) { _, new in new },
                               log: "pipewire")
            try await pollUntil("PipeWire's socket", within: .seconds(15)) { FileManager.default.fileExists(atPath: directory.appendingPathComponent("pipewire-0").path) }
            try session.launch("/usr/bin/wireplumber", [], environment: environment.merging(pipeWire.sessionManagerEnvironment(deadSocket: session.deadSocket)) { _, new in new },
                               log: "wireplumber")
            let mutter = try session.launch("/usr/bin/mutter", ["--headless", "--wayland", "--virtual-monitor", "\(width)x\(height)", "--sm-disable"],
                                            environment: environment, log: "mutter")
            try await mutter.waitFor("Using public X11 display :", seconds: 30)
            try await mutter.waitFor("Added virtual monitor", seconds: 30)
            // "Using public X11 display :0, (using :1 for managed services)"
            let line = mutter.output.split(separator: "\n").first { $0.contains("Using public X11 display :") }.map(String.init) ?? ""
            guard let number = line.components(separatedBy: "display :").last.flatMap({ Int($0.prefix { $0.isNumber }) }) else {
                throw PrivateDaemonError("mutter did not say which X11 display Xwayland has: \(line)")
            }
            var authority: String?
            try await pollUntil("Xwayland's Xauthority file", within: .seconds(15)) {
                authority = (try? FileManager.default.contentsOfDirectory(atPath: directory.path))?.first { $0.hasPrefix(".mutter-Xwaylandauth.") }
                    .map { directory.appendingPathComponent($0).path }
                return authority != nil
            }
            try await session.waitForName("org.gnome.Mutter.ScreenCast")
            return PrivateMutter(session: session, xDisplay: ":\(number)", xAuthority: authority!)
        } catch {
            await session.stop()
            throw error
        }
    }

    /// A new connection to PipeWire's socket (the descriptor a portal's OpenPipeWireRemote would give).
    public func connectToPipeWire() throws -> Int32 { try UnixSocket.connect(path: pipeWireSocket) }

    /// The names of the nodes in PipeWire's graph now, as `pw-dump` lists them.
    public func pipeWireNodeNames() async throws -> [String] {
        let dump = try await CapturedCommand.run("/usr/bin/pw-dump", ["--no-colors"], environment: ["XDG_RUNTIME_DIR": directory.path], timeout: .seconds(15))
        guard dump.succeeded, let objects = try? JSONSerialization.jsonObject(with: Data(dump.output.utf8)) as? [[String: Any]] else {
            throw PrivateDaemonError("pw-dump did not list PipeWire's objects (\(dump.termination)): \(dump.output.prefix(300))")
        }
        return objects.compactMap { object in
            guard object["type"] as? String == "PipeWire:Interface:Node" else { return nil }
            return ((object["info"] as? [String: Any])?["props"] as? [String: Any])?["node.name"] as? String
        }
    }

    /// Stops mutter (and so Xwayland), WirePlumber, PipeWire and the bus by PID; removes the
    /// directory. Safe to call twice.
    public func stop() async { await session.stop() }
}
