import Foundation
import Glibc
import MediaRouteIPC
import Synchronization

/// shairport-sync, a real AirPlay 1 receiver, for the RAOP tests: its audio goes to a FIFO
/// (`output_backend = "pipe"`) that a `cat` child drains into a file opened for appending, read
/// back as 44.1 kHz interleaved stereo Int16. Not a regular file as its pipe: shairport-sync 3.3.8
/// opens the pipe again at each session's start, without O_APPEND, so a second session overwrote
/// the first from byte 0 and looked silent to a reader past the first session's end. Its volume control is configured flat over 30 dB, so an
/// AirPlay volume of −15 is −15 dB at the pipe (the default curve bends it).
///
/// shairport-sync refuses to start without an mDNS backend, so it publishes through a private
/// Avahi daemon (its own namespace, loopback only, on a private bus) and serves RTSP and UDP on the
/// machine's loopback, on ports picked for this run. Started and stopped by PID; `stop()` removes
/// the temporary directory (the audio file, its config, and the metadata FIFO it would otherwise
/// leave in /tmp) and the Avahi daemon's namespace. Its own D-Bus interface (`org.gnome.ShairportSync`,
/// whose `RemoteControl` sends DACP commands to the sender) is on that same private system bus
/// (`dbus_service_bus = "system"`, its default, written out): `busAddress`.
public final class PrivateAirPlayReceiver: Sendable {
    public let name: String
    public let port: Int
    public let password: String?
    public let directory: URL
    private let avahi: PrivateAvahi
    /// shairport-sync itself: a new one after `switchOn()`.
    private let current: Mutex<ChildProcess>
    private var process: ChildProcess { current.withLock { $0 } }
    /// `cat` from the FIFO into the audio file: it reads as fast as shairport-sync writes.
    private let drain: ChildProcess
    private let stopped = Mutex(false)

    static let executable = "/usr/bin/shairport-sync"

    public var host: String { "127.0.0.1" }
    public var audioPath: String { directory.appendingPathComponent("audio.pcm").path }
    public var logPath: String { directory.appendingPathComponent("shairport-sync.log").path }
    public var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
    public var pid: pid_t { process.pid }
    /// The private system bus it and its Avahi daemon are on: browse there to find it; its D-Bus
    /// interface (`org.gnome.ShairportSync`, with `RemoteControl`) and MPRIS are reached there.
    public var busAddress: String { avahi.busAddress }

    private init(name: String, port: Int, password: String?, directory: URL, avahi: PrivateAvahi, process: ChildProcess, drain: ChildProcess) {
        self.name = name
        self.port = port
        self.password = password
        self.directory = directory
        self.avahi = avahi
        current = Mutex(process)
        self.drain = drain
    }

    /// Starts a receiver (with `password`, if given) and returns once its RTSP port accepts
    /// connections; throws with its log if it exits or is not ready within 20 s (10 s ran out once
    /// while the whole suite started its daemons at once).
    /// `logLevel` is its `-v` count: 2 logs the `DACP-ID` and `Active-Remote` it reads off SETUP, 3 also
    /// the status of each DACP request it sends.
    public static func start(name: String = "Test Speaker", password: String? = nil, logLevel: Int = 1) async throws -> PrivateAirPlayReceiver {
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw PrivateDaemonError("\(executable) is missing (apt-get install shairport-sync)")
        }
        let avahi = try await PrivateAvahi()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mediaroute-airplay-\(UUID().uuidString.prefix(8))")
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
            let port = try unusedTCPPort()
            // Its audio, control and timing ports, also below the ephemeral range (see unusedTCPPort).
            let udpBase = Int.random(in: 2600...3198) * 10
            let passwordLine = password.map { "password = \"\($0)\";" } ?? ""
            let config = directory.appendingPathComponent("shairport-sync.conf").path
            try """
            general = { name = "\(name)"; port = \(port); udp_port_base = \(udpBase); udp_port_range = 10; mdns_backend = "avahi";
                        output_backend = "pipe"; volume_control_profile = "flat"; volume_range_db = 30; \(passwordLine)
                        dbus_service_bus = "system"; };
            pipe = { name = "\(directory.appendingPathComponent("audio.fifo").path)"; };
            metadata = { enabled = "no"; pipe_name = "\(directory.appendingPathComponent("shairport-sync-metadata").path)"; };
            """.write(toFile: config, atomically: true, encoding: .utf8)
            let fifo = directory.appendingPathComponent("audio.fifo").path
            guard mkfifo(fifo, 0o600) == 0 else { throw PrivateDaemonError("cannot make the audio FIFO \(fifo): errno \(errno)") }
            let logPath = directory.appendingPathComponent("shairport-sync.log").path
            let log = open(logPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            defer { close(log) }
            let devNull = open("/dev/null", O_RDONLY | O_CLOEXEC)
            defer { close(devNull) }
            let audioFile = open(directory.appendingPathComponent("audio.pcm").path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
            defer { close(audioFile) }
            // Reading before shairport-sync starts: its non-blocking open for writing needs a reader.
            // `cat` reads the FIFO opened read-write as its input: holding a write end itself, it
            // sees no end of file when shairport-sync exits (crash, switched off) and drains the
            // next one's audio too.
            let fifoEnd = open(fifo, O_RDWR | O_CLOEXEC)
            guard fifoEnd >= 0 else { throw PrivateDaemonError("cannot open the audio FIFO \(fifo): errno \(errno)") }
            defer { close(fifoEnd) }
            let drain = try ChildProcess(executable: "/bin/cat", arguments: [], standardInput: fifoEnd, standardOutput: audioFile, standardError: log)
            let process: ChildProcess
            do {
                process = try launch(directory: directory, logLevel: logLevel, busAddress: avahi.busAddress)
            } catch {
                _ = await drain.terminate(grace: .seconds(1))
                throw error
            }
            let receiver = PrivateAirPlayReceiver(name: name, port: port, password: password, directory: directory, avahi: avahi, process: process, drain: drain)
            do {
                try await receiver.waitUntilAccepting()
            } catch {
                await receiver.stop()
                throw error
            }
            return receiver
        } catch {
            try? FileManager.default.removeItem(at: directory)
            await avahi.stop()
            throw error
        }
    }

    /// The audio it has played so far, as interleaved stereo Int16 (host order), from `byteOffset`.
    public func audio(from byteOffset: Int = 0) -> [Int16] {
        guard let file = FileHandle(forReadingAtPath: audioPath) else { return [] }
        defer { try? file.close() }
        guard (try? file.seek(toOffset: UInt64(max(0, byteOffset)))) != nil, let data = try? file.readToEnd() else { return [] }
        return data.withUnsafeBytes { raw in Array(raw.bindMemory(to: Int16.self).prefix(data.count / 2)) }
    }

    /// How many bytes of audio it has written so far (where a later session's audio starts).
    public var audioBytes: Int {
        ((try? FileManager.default.attributesOfItem(atPath: audioPath))?[.size] as? Int) ?? 0
    }

    /// shairport-sync on the configuration in `directory`, its output appended to its log.
    private static func launch(directory: URL, logLevel: Int, busAddress: String) throws -> ChildProcess {
        let log = open(directory.appendingPathComponent("shairport-sync.log").path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        defer { close(log) }
        let devNull = open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer { close(devNull) }
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = busAddress
        return try ChildProcess(executable: executable, arguments: ["-c", directory.appendingPathComponent("shairport-sync.conf").path, "-u",
                                                                    "-" + String(repeating: "v", count: max(1, logLevel))],
                                environment: environment.map { "\($0.key)=\($0.value)" }, standardInput: devNull, standardOutput: log, standardError: log)
    }

    /// Kills shairport-sync with SIGKILL, as a crash or a power cut: it closes nothing itself (the
    /// kernel resets its connections; the Avahi daemon withdraws its announcement).
    public func crash() async {
        process.signal(SIGKILL)
        _ = await process.exitStatus()
    }

    /// Starts shairport-sync again after `switchOff()` or `crash()`, with the same name, ports and
    /// password, and returns once it accepts RTSP.
    public func switchOn(logLevel: Int = 1) async throws {
        let process = try Self.launch(directory: directory, logLevel: logLevel, busAddress: avahi.busAddress)
        current.withLock { $0 = process }
        try await waitUntilAccepting()
    }

    /// Stops shairport-sync alone, as a speaker switched off: its announcement is withdrawn from
    /// the Avahi daemon, which stays (`stop()` still ends both).
    public func switchOff() async {
        _ = await process.terminate(grace: .seconds(3))
    }

    /// Stops it by PID (SIGTERM, SIGKILL after 3 s), then its Avahi daemon and namespace, and removes
    /// its directory. Safe to call twice.
    public func stop() async {
        let first = stopped.withLock { stopped in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        await process.terminate(grace: .seconds(3))
        await drain.terminate(grace: .seconds(1))
        await avahi.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    private func waitUntilAccepting() async throws {
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            if let ended = process.exitIfEnded() {
                throw PrivateDaemonError("shairport-sync \(ended) before accepting RTSP on port \(port); its log:\n\(log)")
            }
            if let fd = try? await TCPSocket.connect(host: host, port: UInt16(port), timeout: .seconds(1)) {
                close(fd)
                return
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw PrivateDaemonError("shairport-sync did not accept RTSP on port \(port) within 20 s; its log:\n\(log)")
    }

    /// A TCP port nothing listens on, below the kernel's ephemeral range (32768 and up): one
    /// from that range (what binding port 0 gives) can be taken as the local port of another test's
    /// outgoing connection before shairport-sync binds it, and it then never listens.
    private static func unusedTCPPort() throws -> Int {
        for _ in 0..<50 {
            let port = Int.random(in: 20_000..<26_000)
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { break }
            defer { close(fd) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = UInt16(port).bigEndian
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
            }
            if bound { return port }
        }
        throw PrivateDaemonError("no TCP port from 20000 to 25999 could be bound for shairport-sync: errno \(errno)")
    }
}
