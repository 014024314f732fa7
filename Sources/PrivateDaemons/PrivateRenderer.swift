import Foundation
import Glibc
import MediaRouteIPC
import Synchronization

/// gmediarender, a real UPnP MediaRenderer, on a host of a `PrivateNetwork`: what the DLNA driver's
/// tests discover, control and watch come and go. Started and stopped by its PID.
public final class PrivateRenderer: Sendable {
    public let host: PrivateHost
    public let name: String
    /// Its UDN is "uuid:" followed by this.
    public let uuid: String
    public let port: UInt16
    private let process: Mutex<ChildProcess>
    private let output = CollectedOutput()
    /// Where the log stood when the latest start began: its readiness is looked for after it.
    private let startMark: Mutex<Int>

    static let executable = "/usr/bin/gmediarender"
    static let curl = "/usr/bin/curl"

    public var udn: String { "uuid:" + uuid }
    public var descriptionURL: String { "http://\(host.address):\(port)/description.xml" }
    /// What it printed so far, across restarts: for failure messages.
    public var log: String { output.text }
    /// The PID of its latest start.
    public var pid: pid_t { process.withLock { $0.pid } }

    private init(host: PrivateHost, name: String, uuid: String, port: UInt16) throws {
        self.host = host
        self.name = name
        self.uuid = uuid
        self.port = port
        startMark = Mutex(0)
        process = Mutex(try Self.spawn(host: host, name: name, uuid: uuid, port: port, output: output))
    }

    /// Starts a renderer on `host` and returns once the controller namespace can fetch its
    /// description; throws with its log if it exits or is not ready within 10 s.
    public static func start(on host: PrivateHost, name: String, uuid: String = UUID().uuidString.lowercased(),
                             port: UInt16 = 49494) async throws -> PrivateRenderer {
        for tool in [executable, curl] where !FileManager.default.isExecutableFile(atPath: tool) {
            throw PrivateDaemonError("\(tool) is missing (apt-get install gmediarender curl)")
        }
        let renderer = try PrivateRenderer(host: host, name: name, uuid: uuid, port: port)
        try await renderer.adoptAndWaitUntilServing()
        return renderer
    }

    /// Starts it again with the same name, UUID and port, as after a reboot (stopping it first if it runs).
    public func restart() async throws {
        await stop()
        startMark.withLock { $0 = output.mark }
        let started = try Self.spawn(host: host, name: name, uuid: uuid, port: port, output: output)
        process.withLock { $0 = started }
        try await adoptAndWaitUntilServing()
    }

    /// Stops it by PID with SIGTERM, so it says goodbye (`ssdp:byebye`) first; SIGKILL after 3 s.
    public func stop() async {
        let current = process.withLock { $0 }
        host.network.release(self)
        await current.terminate(grace: .seconds(3))
    }

    /// Kills it by PID at once: it disappears without a goodbye, as in a crash or a power cut.
    public func kill() async {
        let current = process.withLock { $0 }
        host.network.release(self)
        if current.exitIfEnded() == nil { Glibc.kill(current.pid, SIGKILL) }
        _ = await current.exitStatus()
    }

    /// `ip netns exec` execs gmediarender: the PID is gmediarender's own.
    private static func spawn(host: PrivateHost, name: String, uuid: String, port: UInt16, output: CollectedOutput) throws -> ChildProcess {
        let writeEnd = try output.pipe()
        defer { close(writeEnd) }
        let devNull = open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer { close(devNull) }
        let prefix = host.network.commandPrefix(in: host.namespace)
        let arguments = [executable, "-I", host.interface, "-p", String(port), "-f", name, "-u", uuid,
                         // Real-time sinks: without sync=true a 5 s file "plays" in well under a second.
                         "--gstout-audiopipe=fakesink sync=true", "--gstout-videopipe=fakesink sync=true", "--logfile=stdout"]
        do {
            return try ChildProcess(executable: prefix[0], arguments: Array(prefix.dropFirst()) + arguments,
                                    standardInput: devNull, standardOutput: writeEnd, standardError: writeEnd)
        } catch {
            throw PrivateDaemonError("cannot start gmediarender in \(host.namespace): \(error)")
        }
    }

    /// Waits until it says it is ready and the controller namespace fetches its description naming
    /// its UDN. Whatever goes wrong, the process is not left running.
    private func adoptAndWaitUntilServing() async throws {
        let current = process.withLock { $0 }
        do {
            try host.network.adopt(self)
            try await waitUntilServing(current)
        } catch {
            await kill()
            throw error
        }
    }

    private func waitUntilServing(_ current: ChildProcess) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        let network = host.network
        var lastAnswer = "gmediarender never said it was ready"
        var bindFailedAt: ContinuousClock.Instant?
        while ContinuousClock.now < deadline {
            if let ended = current.exitIfEnded() {
                // Its last words reach the log once the pipe ends; wait for them a moment.
                let flushed = ContinuousClock.now + .milliseconds(500)
                while !output.allEnded && ContinuousClock.now < flushed { try await Task.sleep(for: .milliseconds(10)) }
                throw PrivateDaemonError("gmediarender \"\(name)\" in \(host.namespace) \(ended) before serving \(descriptionURL); its log:\n\(log)")
            }
            let said = output.text(after: startMark.withLock { $0 })
            // gmediarender retries a failed bind each second for a minute. On a loaded machine the
            // first try can fail while the new interface settles, and the next succeeds; a port
            // taken on that host fails every time: a few retries tell the two apart.
            if said.contains("UPNP_E_SOCKET_BIND") {
                let firstFailure = bindFailedAt ?? .now
                bindFailedAt = firstFailure
                if ContinuousClock.now - firstFailure > .seconds(4), !said.contains("Ready for rendering.") {
                    throw PrivateDaemonError("gmediarender \"\(name)\" in \(host.namespace) cannot listen on port \(port) (UPNP_E_SOCKET_BIND for 4 s: does another program on that host use it?); its log:\n\(log)")
                }
            }
            if said.contains("Ready for rendering.") {
                let fetched = try await network.run([Self.curl, "-sS", "-m", "1", descriptionURL], in: network.controllerNamespace, timeout: .seconds(3))
                if fetched.termination == .exited(0) && fetched.standardOutput.contains(udn) { return }
                lastAnswer = "the last fetch of \(descriptionURL) from \(network.controllerNamespace): curl \(fetched.termination) \(fetched.standardError)"
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw PrivateDaemonError("gmediarender \"\(name)\" in \(host.namespace) did not serve \(descriptionURL) within 10 s (\(lastAnswer)); its log:\n\(log)")
    }
}
