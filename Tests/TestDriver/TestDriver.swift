import Foundation
import MediaDevice

/// A driver for the crash-isolation tests: reports the devices it is told to, and on command
/// (a word written to `command` in its state directory) crashes, hangs, floods, sends garbage,
/// lies or closes its channel and lives on, the way a broken driver would.
///
/// Arguments: `--protocol ID` (what it claims in the handshake), `--devices "Name A,Name B"`,
/// `--crash-on-start`, `--crash-on-discovery`, `--simultaneous` (runs several sessions at once),
/// `--start-delay MS` (a driver slow to start, as on a busy machine).
/// Device-side events on command: `lose:NAME` (the device vanishes from the network, and discovery
/// does not find it until `find:NAME`), `find:NAME` (it appears, or is back), `drop:NAME`
/// (it ends its activation on its own), `bad-device` (a device.found that does not decode),
/// `volume:LEVEL` (someone turned the device's own knob), `fail-sessions` (the media stops playing),
/// `interleave:N` (N devices found from another thread, each lost again from the main actor right
/// after, then "Interleaved" found from the main actor: heard in that order, none of the N is left),
/// `hold:NAME` (NAME found from the main actor, which then holds the main thread until a file
/// `release` appears beside the command file, 10 s at most), `lie-started:SESSION` (a
/// `session.started` for a session that is not this driver's). A URL ending in `.hold` starts a
/// session that reports nothing until `fail-sessions`.
@main
final class TestDriver: MediaDeviceExtension {
    let protocolType: UTType
    let supportsSimultaneousSessions: Bool
    lazy var routingManager: MediaDeviceRoutingManager = .routingManager(for: self)
    private let deviceNames: [String]
    private let crashOnDiscovery: Bool
    private var commandPoller: Task<Void, Never>?

    init() {
        let arguments = CommandLine.arguments
        func value(_ flag: String) -> String? { arguments.firstIndex(of: flag).flatMap { arguments.indices.contains($0 + 1) ? arguments[$0 + 1] : nil } }
        protocolType = UTType(exportedAs: value("--protocol") ?? "org.mediaroute.test")
        deviceNames = value("--devices")?.split(separator: ",").map(String.init) ?? []
        crashOnDiscovery = arguments.contains("--crash-on-discovery")
        supportsSimultaneousSessions = arguments.contains("--simultaneous")
        if arguments.contains("--crash-on-start") { abort() }
        if let delay = value("--start-delay").flatMap(UInt32.init) { usleep(delay * 1000) }
        FileHandle.standardError.write(Data("test driver \(protocolType) up\n".utf8))
        print("a stray print must not break the channel")
        commandPoller = Task { @MainActor [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(20))
                self?.runCommandIfAny()
            }
        }
    }

    private var commandPath: String { (routingManager.stateDirectory as NSString).appendingPathComponent("command") }

    private func runCommandIfAny() {
        guard let data = FileManager.default.contents(atPath: commandPath) else { return }
        try? FileManager.default.removeItem(atPath: commandPath)
        let command = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        FileHandle.standardError.write(Data("test driver: command \(command)\n".utf8))
        switch command {
        case "segv": segfault()
        case "abort": abort()
        case "exit": exit(3)
        case "hang": while true { usleep(1_000_000) }  // blocks the main actor: no callback, no heartbeat answer
        // Its end of the channel closes for writing while it lives on (the main thread, which runs the SDK's loop, held).
        case "close-channel":
            shutdown(3, Int32(SHUT_WR))
            while true { pause() }
        case "flood": for i in 0..<100_000 { routingManager.foundDevice(device("Flood \(i % 10)")) }
        case "garbage": rawFrame(Array("{\"jsonrpc\":\"2.0\",".utf8))
        case "lie-device": rawFrame(Array(#"{"jsonrpc":"2.0","method":"device.found","params":{"device":{"id":"x","displayName":"Stolen TV","capabilities":["urlPlayback"],"protocol":"org.other.protocol"}}}"#.utf8))
        case "bad-reply": rawFrame(Array(#"{"jsonrpc":"2.0","id":987654,"result":null}"#.utf8))
        case "bad-device": rawFrame(Array(#"{"jsonrpc":"2.0","method":"device.found","params":{"device":{"id":"y","displayName":"Odd TV","capabilities":"urlPlayback"}}}"#.utf8))
        case _ where command.hasPrefix("drop:"):
            // The device ends the activation on its own (it rebooted) but stays on the network.
            let name = String(command.dropFirst(5))
            for (session, device) in activations where device.displayName == name {
                routingManager.deviceDeactivated(device, session: MediaOutputSession(id: session), error: MediaDeviceError(.connectionFailed, "\(name) restarted"))
            }
        case _ where command.hasPrefix("lose:"):
            away.insert(String(command.dropFirst(5)))
            routingManager.lostDevice(device(String(command.dropFirst(5))))
        case _ where command.hasPrefix("volume:"):
            level = Float(command.dropFirst(7)) ?? level
            for playback in sessions.values { playback.volume = level }
            for name in deviceNames { routingManager.volumeChanged(for: device(name)) }
        case _ where command.hasPrefix("interleave:"):
            let rounds = Int(command.dropFirst(11)) ?? 0
            let (routing, make) = (routingManager, Self.device)
            let id = protocolType.identifier
            Thread.detachNewThread {
                for round in 0..<rounds {
                    routing.foundDevice(make(id, "Ordered \(round)"))
                    Task { @MainActor in routing.lostDevice(make(id, "Ordered \(round)")) }
                }
                Task { @MainActor in routing.foundDevice(make(id, "Interleaved")) }
            }
        case _ where command.hasPrefix("hold:"):
            routingManager.foundDevice(device(String(command.dropFirst(5))))
            let release = (routingManager.stateDirectory as NSString).appendingPathComponent("release")
            let deadline = ContinuousClock.now + .seconds(10)
            while !FileManager.default.fileExists(atPath: release), ContinuousClock.now < deadline { usleep(1000) }
        case _ where command.hasPrefix("lie-started:"):
            rawFrame(Array(#"{"jsonrpc":"2.0","method":"session.started","params":{"session":"\#(command.dropFirst(12))","state":{"state":"playing"}}}"#.utf8))
        case "fail-sessions":
            for id in held { routingManager.sessionFailed(MediaOutputSession(id: id), error: MediaDeviceError(.sessionFailed, "the media never started")) }
            held.removeAll()
            for id in sessions.keys { routingManager.sessionFailed(MediaOutputSession(id: id), error: MediaDeviceError(.sessionFailed, "the media stopped: decoder error")) }
            sessions.removeAll()
        case _ where command.hasPrefix("find:"):  // a device appears on the network while discovery runs
            away.remove(String(command.dropFirst(5)))
            routingManager.foundDevice(device(String(command.dropFirst(5))))
        default: FileHandle.standardError.write(Data("test driver: unknown command \(command)\n".utf8))
        }
    }

    /// A real invalid memory access: a raised SIGSEGV would be caught and survived by Swift's
    /// backtracer, a fault is not.
    private func segfault() {
        UnsafeMutablePointer<Int>(bitPattern: 0x10)!.pointee = 42
    }

    /// Writes a frame straight to the supervisor's socket, bypassing the SDK, as a broken driver would.
    private func rawFrame(_ body: [UInt8]) {
        let length = UInt32(body.count).bigEndian
        let frame = withUnsafeBytes(of: length) { Array($0) } + body
        _ = frame.withUnsafeBytes { write(3, $0.baseAddress, $0.count) }
    }

    private func device(_ name: String) -> MediaOutputDevice { Self.device(protocolType.identifier, name) }

    private nonisolated static func device(_ protocolID: String, _ name: String) -> MediaOutputDevice {
        let id = protocolID + "/" + name.lowercased().replacingOccurrences(of: " ", with: "-")
        return MediaOutputDevice(id: id, displayName: name, capabilities: [.urlPlayback], deviceType: .tv,
                                 volumeControl: .absolute, canMute: true)!
    }

    func startDeviceDiscovery() {
        FileHandle.standardError.write(Data("test driver: discovery started\n".utf8))
        if crashOnDiscovery { segfault() }
        for name in deviceNames where !away.contains(name) { routingManager.foundDevice(device(name)) }
    }

    /// Devices lost (`lose:`) and not found again (`find:`).
    private var away: Set<String> = []

    func stopDeviceDiscovery() {}
    /// Devices named "Secure ..." want the code 4321 before they activate.
    static let pairingCode = "4321"

    func activateDevice(_ device: MediaOutputDevice, session: MediaOutputSession, for deviceFeatures: MediaOutputDevice.Capabilities) {
        if device.displayName.hasPrefix("Secure") {
            routingManager.requestPairingCode(for: device, session: session, reason: "Enter the code shown on the screen.",
                                              authorizationMethod: .numericCode(length: .fourCharacter))
        } else {
            activated(device, session)
        }
    }

    /// Active devices by session, for `drop:NAME`.
    private var activations: [String: MediaOutputDevice] = [:]

    private func activated(_ device: MediaOutputDevice, _ session: MediaOutputSession) {
        activations[session.id] = device
        routingManager.activatedDevice(device, session: session)
    }

    func connectUsingPairingCode(_ pairingCode: String?, to device: MediaOutputDevice, session: MediaOutputSession) {
        switch pairingCode {
        case nil: routingManager.failedToActivateDevice(device, session: session, error: MediaDeviceError(.authorizationFailed, "pairing with \(device.displayName) was cancelled"))
        case Self.pairingCode?: activated(device, session)
        case let wrong?: routingManager.failedToActivateDevice(device, session: session, error: MediaDeviceError(.authorizationFailed, "\(device.displayName) refused the code \(wrong)"))
        }
    }
    func deactivateDevice(_ device: MediaOutputDevice, session: MediaOutputSession) {
        FileHandle.standardError.write(Data("test driver: deactivated \(device.displayName) (\(session.id))\n".utf8))
        sessions[session.id] = nil
        activations[session.id] = nil
    }
    func setVolume(_ volume: Float, for device: MediaOutputDevice) { level = volume }
    func volume(for device: MediaOutputDevice) -> Float { level }
    func changeVolume(by increments: Int, for device: MediaOutputDevice) { level = min(1, max(0, level + Float(increments) * 0.05)) }
    func muteDevice(_ device: MediaOutputDevice) { muted = true }
    func unmuteDevice(_ device: MediaOutputDevice) { muted = false }
    func isDeviceMuted(_ device: MediaOutputDevice) -> Bool { muted }
    private var sessions: [String: Playback] = [:]
    private var held: Set<String> = []

    func startSession(_ session: MediaOutputSession, identifier: String?, url: URL) {
        if url.path.hasSuffix(".hold") {
            held.insert(session.id)
            return
        }
        guard url.path.hasSuffix(".mp4") || url.path.hasSuffix(".wav") else {
            routingManager.sessionFailed(session, error: MediaDeviceError(.sessionFailed, "cannot play \(url.lastPathComponent): not a media file"))
            return
        }
        let playback = Playback(session: session.id)
        playback.isPlaying = true
        // The "device" advances the position while playing, as a real receiver reports it.
        Task { @MainActor [weak playback] in
            while let playback {
                try? await Task.sleep(for: .milliseconds(100))
                if playback.isPlaying { playback.currentPlaybackPosition += 0.1 * Double(playback.playbackSpeed) }
            }
        }
        sessions[session.id] = playback
        routingManager.started(application: identifier, playbackControl: playback, session: session)
    }

    func stopSession(_ session: MediaOutputSession) { sessions[session.id] = nil }
    /// Every application on the "device" answers each message with the same bytes, reversed.
    func sendData(_ data: Data, toApplication applicationIdentifier: String, session: MediaOutputSession) {
        routingManager.sendData(Data(data.reversed()), toApplication: applicationIdentifier, session: session)
    }

    private var level: Float = 0.5
    private var muted = false
}

/// The remote playback state of one test session: what a real driver mirrors from its device.
@MainActor
final class Playback: AVInterfaceControllable {
    let session: String
    init(session: String) { self.session = session }
    /// Changes are logged (to the supervisor's log): tests check what the system asked of the device.
    var isPlaying = false {
        didSet {
            state = isPlaying ? .playing : .paused
            if oldValue != isPlaying { FileHandle.standardError.write(Data("test driver: \(isPlaying ? "playing" : "paused") \(session)\n".utf8)) }
        }
    }
    private(set) var state = AVInterfacePlaybackState.stopped
    var currentPlaybackPosition = 0.0
    var playbackSpeed: Float = 1
    var timeRange: ClosedRange<Double>? = 0...60
    var volume: Float = 1
    var isMuted = false
    let audioOptions = ["English", "Français"]
    var selectedAudioOption: String? = "English"
    let subtitleOptions: [String] = []
    var selectedSubtitleOption: String?
    let metadata = AVInterfaceMetadata(title: "Test Pattern", artist: "MediaRoute")
}
