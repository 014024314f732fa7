import Foundation
import MediaRouteIPC

/// A wlroots desktop's screen-sharing stack for one test, on a private session bus: headless sway
/// (software rendering; it refuses to run as root, so it runs as `nobody`), PipeWire (configured as
/// `IsolatedPipeWireConfiguration`: nothing of the machine's), xdg-desktop-portal-wlr and
/// xdg-desktop-portal. Or, `withScreenCastBackend: false`, the portal
/// alone with no backend at all. Started and stopped by PID; `stop` removes the runtime directory.
public final class PrivateSwayDesktop: Sendable {
    private let session: PrivateSession

    public var directory: URL { session.directory }
    public var bus: PrivateBus { session.bus }
    /// The PIDs of every process started.
    public var pids: [Int32] { session.pids }
    /// What they printed, for a failing test's message.
    public var logs: String { session.logs }

    private init(session: PrivateSession) { self.session = session }

    public static func start(withScreenCastBackend backend: Bool = true) async throws -> PrivateSwayDesktop {
        let session = try await PrivateSession(directory: FileManager.default.temporaryDirectory.appendingPathComponent("mediaroute-sway-\(UUID().uuidString.prefix(8))"))
        do {
            let directory = session.directory, runtime = directory.appendingPathComponent("run")
            try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true)
            // sway's runtime directory is its own user's (nobody's), as a login session's would be.
            guard chown(runtime.path, 65534, 65534) == 0 else { throw PrivateDaemonError("cannot give \(runtime.path) to nobody: errno \(errno)") }
            try FileManager.default.createDirectory(at: directory.appendingPathComponent("no-portals"), withIntermediateDirectories: true)
            try "".write(to: directory.appendingPathComponent("sway.conf"), atomically: true, encoding: .utf8)
            // The backend's own output choice, as a person would make it in a chooser: its default
            // choosers (slurp, wofi, bemenu) are not installed, and trying them forks the backend.
            try "[screencast]\nchooser_type=none\noutput_name=HEADLESS-1\n".write(to: directory.appendingPathComponent("xdpw.conf"), atomically: true, encoding: .utf8)
            let environment = session.environment(runtime: runtime, home: runtime).merging(["XDG_CURRENT_DESKTOP": "sway"]) { _, new in new }
            if backend {
                try session.launch("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "--", "/usr/bin/sway", "-c", directory.appendingPathComponent("sway.conf").path],
                                   environment: environment.merging(["WLR_BACKENDS": "headless", "WLR_RENDERER": "pixman", "WLR_LIBINPUT_NO_DEVICES": "1"]) { _, new in new },
                                   log: "sway")
                var wayland: String?
                try await pollUntil("sway's Wayland socket", within: .seconds(30)) {
                    wayland = (try? FileManager.default.contentsOfDirectory(atPath: runtime.path))?.first { $0.hasPrefix("wayland-") && !$0.hasSuffix(".lock") }
                    return wayland != nil
                }
                // Its output exists once sway's IPC lists it: the portal backend picks it at SelectSources.
                try await pollUntil("headless output in sway", within: .seconds(30)) {
                    guard let ipc = (try? FileManager.default.contentsOfDirectory(atPath: runtime.path))?.first(where: { $0.hasPrefix("sway-ipc.") }) else { return false }
                    let outputs = try await CapturedCommand.run("/usr/bin/swaymsg", ["-s", runtime.appendingPathComponent(ipc).path, "-t", "get_outputs", "-r"],
                                                                timeout: .seconds(10))
                    return outputs.succeeded && outputs.output.contains("HEADLESS-")
                }
                let pipeWire = IsolatedPipeWireConfiguration(directory: directory.appendingPathComponent("pipewire-config").path, nullSink: nil)
                try pipeWire.write()
                try session.launch("/usr/bin/pipewire", [], environment: environment.merging(pipeWire.serverEnvironment(deadSocket: session.deadSocket)) { _, new in new },
                                   log: "pipewire")
                try await pollUntil("PipeWire's socket", within: .seconds(15)) { FileManager.default.fileExists(atPath: runtime.appendingPathComponent("pipewire-0").path) }
                try session.launch("/usr/libexec/xdg-desktop-portal-wlr", ["-l", "DEBUG", "-c", directory.appendingPathComponent("xdpw.conf").path],
                                   environment: environment.merging(["WAYLAND_DISPLAY": wayland!]) { _, new in new }, log: "xdg-desktop-portal-wlr")
                try await session.waitForName("org.freedesktop.impl.portal.desktop.wlr")
                try session.launch("/usr/libexec/xdg-desktop-portal", ["--verbose"], environment: environment, log: "xdg-desktop-portal")
            } else {
                // No portal description to load: the portal offers only the interfaces it implements itself.
                try session.launch("/usr/libexec/xdg-desktop-portal", ["--verbose"],
                                   environment: environment.merging(["XDG_DESKTOP_PORTAL_DIR": directory.appendingPathComponent("no-portals").path]) { _, new in new },
                                   log: "xdg-desktop-portal")
            }
            try await session.waitForName("org.freedesktop.portal.Desktop")
            return PrivateSwayDesktop(session: session)
        } catch {
            await session.stop()
            throw error
        }
    }

    /// Stops everything by PID, last started first, then the bus; removes the directory. Safe to call twice.
    public func stop() async { await session.stop() }
}
