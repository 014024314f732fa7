import ArgumentParser
import CLinuxHelpers
import Foundation
import MediaDevice
import MediaRouteIPC
import ReferenceProtocol
import SoundOutput

/// `mediaroute-receiver`: a network media device of the reference protocol (PROTOCOL.md).
@main
struct ReceiverCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mediaroute-receiver",
        abstract: "A media receiver of the MediaRoute reference protocol, announced over Avahi.",
        discussion: """
        It plays URLs at real-time pace (through ffmpeg) and real-time audio (through a playout buffer) on the \
        sound output --audio-output names, shows real-time video, and the picture of a URL that has one, in a window per stream or URL \
        (through ffplay) as --video-output says, keeps a volume, pairs controllers with a code it \
        prints, and runs the applications org.mediaroute.echo and org.mediaroute.notes for data channels. \
        Its buttons are commands on standard input: volume 0-100, mute, unmute, pause, resume, status.
        """)

    @Option(help: "The name people see in the picker.") var name: String
    @Option(help: "A stable device id (default: one kept in the state directory).") var id: String?
    @Option(help: "The model, announced in the TXT record.") var model = "MediaRoute Receiver"
    @Option(help: "tv, speaker, headphones, receiver, setTopBox, computer or unknown.") var type: String = "tv"
    @Option(help: "What pairing asks for: none, pin4, pin6 or password.") var auth: String = "pin4"
    @Option(help: "The password, with --auth password.") var password: String?
    @Option(help: "The address to listen on (numeric IPv4).") var host = "0.0.0.0"
    @Option(help: "The TCP port (0: any free one).") var port: UInt16 = 0
    @Option(name: .customLong("state-dir"), help: "Where paired controllers and the device id are kept.") var stateDirectory: String
    @Option(name: .customLong("record"), help: "Record real-time streams into this directory (STREAM.wav, STREAM.h264).") var recordDirectory: String?
    @Flag(name: .customLong("report-onsets"), help: "Print the monotonic time at which decoded audio starts after silence.") var reportOnsets = false
    @Option(name: .customLong("audio-output"), help: ArgumentHelp("Where sound plays: auto (a PulseAudio or PipeWire server, else a sound card, else null), pulse, pipewire, alsa or null (nowhere, at real-time pace).",
                                                                 valueName: "auto|pulse|pipewire|alsa|null"))
    var audioOutput: String = "auto"
    @Option(name: .customLong("alsa-device"), help: "The ALSA device for --audio-output alsa (`aplay -L` lists them).") var alsaDevice = "default"
    @Option(name: .customLong("video-output"), help: ArgumentHelp("Where real-time video and the picture of a URL show: auto (a window per stream or URL when there is a display, DISPLAY or WAYLAND_DISPLAY, else none), window (fails without a display) or none. --record works with any of them.",
                                                                 valueName: "auto|window|none"))
    var videoOutput: String = "auto"
    @Option(name: .customLong("drop-video-packet"), help: ArgumentHelp("Drop this RTP packet (1-based) of every video stream, as a lossy network would.", visibility: .hidden))
    var dropVideoPacket: Int?
    @Option(name: .customLong("unpaired-idle-seconds"), help: "Close a connection that has not paired after this long without a request (unless a code it asked for is still valid).")
    var unpairedIdleSeconds = 20
    @Option(name: .customLong("unpaired-lifetime-seconds"), help: "Close a connection that has not paired this long after it opened, whatever it does.")
    var unpairedLifetimeSeconds = 150
    @Option(name: .customLong("unpaired-per-address"), help: "Connections that have not paired one address may keep open; more close its oldest.")
    var unpairedPerAddress = 4
    @Option(name: .customLong("unpaired-total"), help: "Connections that have not paired kept open in all; more close the oldest of the address keeping the most.")
    var unpairedTotal = 64

    func validate() throws {
        guard !name.isEmpty, name.utf8.count <= 63 else { throw ValidationError("--name must be 1 to 63 bytes (a DNS-SD instance name)") }
        if let id, !ReceiverAnnouncement.isIdentifier(id) { throw ValidationError("--id must be 1-64 of A-Z a-z 0-9 . _ -, not \"\(id)\"") }
        guard MediaOutputDevice.DeviceType(rawValue: type) != nil else {
            throw ValidationError("--type must be one of \(MediaOutputDevice.DeviceType.allCases.map(\.rawValue).joined(separator: ", ")), not \"\(type)\"")
        }
        guard AudioOutputChoice(rawValue: audioOutput) != nil else {
            throw ValidationError("--audio-output must be one of \(AudioOutputChoice.allCases.map(\.rawValue).joined(separator: ", ")), not \"\(audioOutput)\"")
        }
        guard VideoOutputChoice(rawValue: videoOutput) != nil else {
            throw ValidationError("--video-output must be one of \(VideoOutputChoice.allCases.map(\.rawValue).joined(separator: ", ")), not \"\(videoOutput)\"")
        }
        guard let authorization = ReceiverAnnouncement.Authorization(rawValue: auth) else { throw ValidationError("--auth must be none, pin4, pin6 or password, not \"\(auth)\"") }
        if authorization == .password && (password ?? "").isEmpty { throw ValidationError("--auth password needs --password") }
        for (option, value) in [("--unpaired-idle-seconds", unpairedIdleSeconds), ("--unpaired-lifetime-seconds", unpairedLifetimeSeconds),
                                ("--unpaired-per-address", unpairedPerAddress), ("--unpaired-total", unpairedTotal)] where !(1...86_400).contains(value) {
            throw ValidationError("\(option) must be from 1 to 86400, not \(value)")
        }
    }

    func run() async throws {
        clh_line_buffer_stdout()
        guard let ffmpeg = Self.executable("ffmpeg"), let ffprobe = Self.executable("ffprobe") else {
            throw ValidationError("ffmpeg and ffprobe are needed to play media: apt-get install ffmpeg")
        }
        try FileManager.default.createDirectory(atPath: stateDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        if let recordDirectory { try FileManager.default.createDirectory(atPath: recordDirectory, withIntermediateDirectories: true) }
        let output = AudioOutputChoice(rawValue: audioOutput)!.resolved()
        try checkSoundOutput(output)
        let ffplay = Self.executable("ffplay")
        let (video, why) = try VideoOutputChoice(rawValue: videoOutput)!.resolved(ffplay: ffplay)
        say(video == .window ? "video to a window per stream (\(ffplay!))" : "video to none" + (why.map { " (\($0))" } ?? ""))
        let announcement = ReceiverAnnouncement(id: try deviceID(), model: model, deviceType: MediaOutputDevice.DeviceType(rawValue: type)!,
                                                capabilities: [.urlPlayback, .realtimeAudioStreaming, .realtimeVideoStreaming], authorization: ReceiverAnnouncement.Authorization(rawValue: auth)!,
                                                volumeControl: .absolute, canMute: true)
        let unpaired = UnpairedLimits(idle: .seconds(unpairedIdleSeconds), lifetime: .seconds(unpairedLifetimeSeconds),
                                      perAddress: unpairedPerAddress, total: unpairedTotal)
        let receiver = try Receiver(configuration: ReceiverConfiguration(name: name, announcement: announcement, password: password, host: host,
                                                                          port: port, stateDirectory: stateDirectory, ffmpeg: ffmpeg, ffprobe: ffprobe,
                                                                          recordDirectory: recordDirectory, reportOnsets: reportOnsets,
                                                                          dropVideoPacket: dropVideoPacket, unpaired: unpaired,
                                                                          audioOutput: output, alsaDevice: alsaDevice, videoOutput: video, ffplay: ffplay))
        let signals = try SignalPipe([SIGTERM, SIGINT])
        try await receiver.start()
        let console = Task {
            for await line in StandardInputLines.stream() { await receiver.console(line) }
        }
        let number = await signals.next() ?? 0
        say("signal \(number): withdrawing")
        console.cancel()
        await receiver.shutdown()
    }

    /// Opens the sound output once, so that one that cannot play says why now rather than at the first stream.
    private func checkSoundOutput(_ output: AudioOutputChoice) throws {
        guard let destination = output.destination(alsaDevice: alsaDevice) else {
            return say(audioOutput == "auto" ? "sound to null: no PulseAudio or PipeWire server and no sound card found" : "sound to null")
        }
        do {
            try output.openSink(alsaDevice: alsaDevice, sampleRate: 48_000, channels: 2, latency: .milliseconds(30)).close(draining: false)
        } catch {
            throw SoundOutputError("--audio-output \(output.rawValue): \(error)")
        }
        say("sound to \(output.rawValue) (\(destination))")
    }

    /// The id given, else the one kept in the state directory, else a new one kept there.
    private func deviceID() throws -> String {
        if let id { return id }
        let path = (stateDirectory as NSString).appendingPathComponent("device-id")
        if let kept = try? String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines),
           ReceiverAnnouncement.isIdentifier(kept) {
            return kept
        }
        let made = UUID().uuidString.lowercased()
        try made.write(toFile: path, atomically: true, encoding: .utf8)
        return made
    }

    /// A program found on PATH (posix_spawn does not search it).
    static func executable(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}

/// Lines on standard input, read on a thread of their own; ends at end of input.
enum StandardInputLines {
    static func stream() -> AsyncStream<String> {
        AsyncStream { continuation in
            Thread.detachNewThread {
                while let line = readLine() { continuation.yield(line) }
                continuation.finish()
            }
        }
    }
}
