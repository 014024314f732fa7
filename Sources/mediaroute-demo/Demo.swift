import Foundation
import MediaRouteIPC
import PrivateDaemons
import ReferenceProtocol

/// The demo's stage and script: the processes it starts (in a temporary directory of its own), and
/// what an operator and an app then do with them, printed as a transcript.
final class Demo: @unchecked Sendable {
    let root: String
    private let binaries: String
    private let privateAvahi: Bool
    private let lock = NSLock()
    private var closed = false
    private var avahi: PrivateAvahi?
    private var media: MediaFileServer?
    private var receiver: ConsoleProcess?
    private var daemon: ConsoleProcess?
    private var consoles: [ConsoleProcess] = []
    private var environment: [String: String] = [:]
    private var socket: String { root + "/mediarouted.sock" }
    private var mediaURL = ""

    static let receiverName = "Demo TV"

    init(privateAvahi: Bool) throws {
        self.privateAvahi = privateAvahi
        root = NSTemporaryDirectory() + "mediaroute-demo-\(UUID().uuidString.prefix(8).lowercased())"
        try FileManager.default.createDirectory(atPath: root + "/media", withIntermediateDirectories: true)
        binaries = Executables.directory
        for program in ["mediarouted", "mediaroute", "mediaroute-receiver", "mediaroute-reference-driver", "mediaroute-player"]
        where !FileManager.default.isExecutableFile(atPath: binaries + "/" + program) {
            throw DemoFailure(step: "finding the programs", reason: "\(binaries)/\(program) is missing; build everything first (`swift build`)")
        }
    }

    func run() async throws {
        print("MediaRoute demo: a receiver of the reference protocol, mediarouted, the operator's CLI, and an app.\n")
        try await step("finding an Avahi daemon") { try await self.findAvahi() }
        try await step("making media to play") {
            try await MediaFileServer.makeTone(at: self.root + "/media/demo.wav", seconds: 12, title: "MediaRoute Demo Tone")
            let media = try await MediaFileServer(directory: self.root + "/media")
            try await self.keep(media) { self.media = $0 }
            self.mediaURL = media.url("demo.wav")
            print("  media     a 12 s tone, served over HTTP at \(self.mediaURL)")
        }
        try await step("starting the receiver") { try await self.startReceiver() }
        try await step("starting mediarouted") { try await self.startDaemon() }
        print("")
        try await step("listing devices") {
            let started = ContinuousClock.now
            let listed = try await self.cli(["devices", "--until", "1", "--wait", "20"])
            guard listed.contains(Self.receiverName) else { throw DemoFailure(step: "listing devices", reason: "\(Self.receiverName) was not discovered within 20 s") }
            print("  (\(Self.receiverName) was listed \((ContinuousClock.now - started).milliseconds) ms after the picker opened, the driver's start included)\n")
        }
        try await step("pairing with the receiver") { try await self.pair() }
        try await step("playing the media") {
            _ = try await self.cli(["play", self.mediaURL, "--to", Self.receiverName])
            try await Task.sleep(for: .seconds(2))
            _ = try await self.cli(["sessions"])
        }
        try await step("changing the volume") {
            _ = try await self.cli(["volume", Self.receiverName, "30"])
            let mark = self.receiver!.mark
            self.receiver!.type("volume 60")
            try await self.receiver!.waitFor("volume 60%", after: mark)
            print("  (someone turns \(Self.receiverName)'s own volume knob to 60%)\n")
            try await Task.sleep(for: .milliseconds(300))
            let shown = try await self.cli(["volume", Self.receiverName])
            guard shown.contains("60%") else { throw DemoFailure(step: "changing the volume", reason: "the device's own change did not reach mediarouted: \(shown)") }
        }
        try await step("pausing and seeking") {
            _ = try await self.cli(["pause"])
            _ = try await self.cli(["seek", "8"])
            _ = try await self.cli(["resume"])
            _ = try await self.cli(["stop"])
        }
        try await step("exchanging data with the receiver's notes application") { try await self.exchangeData() }
        try await step("deactivating") { _ = try await self.cli(["deactivate", Self.receiverName]) }
    }

    // MARK: The stage

    private func findAvahi() async throws {
        if !privateAvahi, await PrivateAvahi.systemDaemonIsReachable() {
            print("  avahi     the machine's own Avahi daemon answers on the system bus: the receiver is announced on your network")
            return
        }
        guard getuid() == 0 else {
            throw DemoFailure(step: "finding an Avahi daemon", reason: "no Avahi daemon answers on the system bus, and starting a private one needs root (a network namespace): start avahi-daemon, or run the demo as root")
        }
        let avahi = try await PrivateAvahi()
        try await keep(avahi) { self.avahi = $0 }
        environment = avahi.environment
        print("  avahi     none on this machine: started a private dbus-daemon and avahi-daemon in network namespace \(avahi.namespace) (loopback only)")
    }

    private func startReceiver() async throws {
        let host = avahi == nil ? "0.0.0.0" : "127.0.0.1"
        let receiver = try ConsoleProcess(binaries + "/mediaroute-receiver",
                                          ["--name", Self.receiverName, "--auth", "pin4", "--host", host, "--state-dir", root + "/receiver"],
                                          environment: environment, logPath: root + "/receiver.log")
        try await keep(receiver) { self.receiver = $0 }
        try await receiver.waitFor("announced as \"", seconds: 20)
        print("  receiver  \(receiver.lastLine(startingWith: "announced as") ?? "announced"); it pairs with a 4-digit code it prints")
    }

    private func startDaemon() async throws {
        let drivers = root + "/drivers"
        try FileManager.default.createDirectory(atPath: drivers, withIntermediateDirectories: true)
        let manifest = ReferenceProtocol.driverManifest(executable: binaries + "/mediaroute-reference-driver")
        try Data(JSONWriter.encode(manifest)).write(to: URL(fileURLWithPath: drivers + "/org.mediaroute.reference.json"))
        let daemon = try ConsoleProcess(binaries + "/mediarouted", ["--drivers-dir", drivers, "--state-dir", root + "/state", "--socket", socket],
                                        environment: environment, logPath: root + "/mediarouted.log")
        try await keep(daemon) { self.daemon = $0 }
        try await daemon.waitFor("listening on", seconds: 20)
        print("  daemon    mediarouted (pid \(daemon.process.pid)) with the reference driver, on \(socket)")
    }

    /// `mediaroute activate`: the receiver prints a code, and the person types it at the prompt.
    private func pair() async throws {
        print("$ mediaroute activate \"\(Self.receiverName)\"")
        let receiverMark = receiver!.mark
        let cli = try await console(binaries + "/mediaroute", ["--socket", socket, "activate", Self.receiverName], log: "activate")
        try await receiver!.waitFor("pairing code for ", after: receiverMark)
        guard let code = receiver!.lastLine(startingWith: "pairing code for ", after: receiverMark)?.split(separator: " ").last else {
            throw DemoFailure(step: "pairing with the receiver", reason: "the receiver printed no code")
        }
        try await cli.waitFor("(Ctrl-C cancels): ")
        cli.type(String(code))
        let ended = await cli.process.exitStatus()
        print(cli.output.replacingOccurrences(of: "(Ctrl-C cancels): ", with: "(Ctrl-C cancels): \(code)   <- the code \(Self.receiverName) shows\n"))
        guard ended == .exited(0) else { throw DemoFailure(step: "pairing with the receiver", reason: "mediaroute activate \(ended)") }
    }

    /// The example app, in application mode with the receiver's notes application, typing on its console.
    private func exchangeData() async throws {
        let arguments = ["--protocol", "org.mediaroute.reference", "--app-id", "org.mediaroute.notes", "--mode", "application", mediaURL]
        print("$ mediaroute-player \(arguments.map(Self.quoted).joined(separator: " "))")
        let player = try await console(binaries + "/mediaroute-player", ["--socket", socket] + arguments, log: "player")
        try await player.waitFor("state: playing")
        for (typed, answer) in [("send add buy milk", "data: noted 1"), ("send add call mum", "data: noted 2"), ("send list", "data: buy milk")] {
            let mark = player.mark
            player.type(typed)
            try await player.waitFor(answer, after: mark)
        }
        player.type("quit")
        let ended = await player.process.exitStatus()
        for line in player.output.split(separator: "\n", omittingEmptySubsequences: false) { print("  \(line)") }
        guard ended == .exited(0) else { throw DemoFailure(step: "exchanging data", reason: "mediaroute-player \(ended)") }
    }

    /// Runs the operator's CLI and prints the command and what it said, as at a terminal.
    private func cli(_ arguments: [String]) async throws -> String {
        print("$ mediaroute \(arguments.map(Self.quoted).joined(separator: " "))")
        let output = try await ChildOutput.run(binaries + "/mediaroute", ["--socket", socket] + arguments,
                                               environment: ProcessInfo.processInfo.environment.merging(environment) { $1 }.map { "\($0.key)=\($0.value)" })
        let shown = output.standardOutput + output.standardError
        print(shown.hasSuffix("\n") ? shown : shown + "\n")
        guard output.termination == .exited(0) else {
            throw DemoFailure(step: "mediaroute \(arguments.joined(separator: " "))", reason: "\(output.termination): \(output.standardError)")
        }
        return output.standardOutput
    }

    private func console(_ executable: String, _ arguments: [String], log: String) async throws -> ConsoleProcess {
        let console = try ConsoleProcess(executable, arguments, environment: environment, logPath: "\(root)/\(log).log")
        try await keep(console) { consoles.append($0) }
        return console
    }

    /// Records something started, for `cleanUp`; if the demo is already cleaning up (Ctrl-C came
    /// while it started), stops it at once instead, so nothing is left behind.
    private func keep<Thing: Stoppable>(_ thing: Thing, _ record: (Thing) -> Void) async throws {
        let refused = lock.withLock { () -> Bool in
            if closed { return true }
            record(thing)
            return false
        }
        if refused {
            await thing.stop()
            throw DemoFailure(step: "the demo", reason: "interrupted")
        }
    }

    /// Runs one step; a failure names the step, and the logs that say why.
    private func step(_ name: String, _ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch let failure as DemoFailure {
            throw failure
        } catch {
            throw DemoFailure(step: name, reason: "\(error)")
        }
    }

    /// Stops everything the demo started, by PID, and removes its directory.
    func cleanUp() async {
        let (consoles, daemon, receiver, media, avahi) = lock.withLock {
            closed = true
            return (self.consoles, self.daemon, self.receiver, self.media, self.avahi)
        }
        for console in consoles { await console.stop() }
        await daemon?.stop()  // stops its drivers first
        await receiver?.stop()  // withdraws its announcement
        await media?.stop()
        await avahi?.stop()
        try? FileManager.default.removeItem(atPath: root)
    }

    private static func quoted(_ argument: String) -> String { argument.contains(" ") ? "\"\(argument)\"" : argument }
}

/// What the demo starts and must stop.
protocol Stoppable: Sendable {
    func stop() async
}

extension PrivateAvahi: Stoppable {}
extension MediaFileServer: Stoppable {}
extension ConsoleProcess: Stoppable {
    func stop() async { await stop(grace: .seconds(5)) }
}
