import A2DP
import DBus
import Glibc
import MediaDevice
import PCMPlayback

/// One activated Bluetooth device: its A2DP transport, what plays on it (app sample streams or a
/// URL played here), and its volume. The transport is acquired while something plays and
/// released when nothing does, so the device can sleep.
@MainActor
final class ActiveSpeaker: SampleOutput {
    let device: MediaOutputDevice
    let session: MediaOutputSession
    let path: DBusObjectPath
    private let blueZ: BlueZConnection
    /// The transport BlueZ configured for us, once the device connected.
    var transport: DBusObjectPath?
    /// The acquired socket and its write MTU, while anything plays.
    private var socket: (fd: Int32, writeMTU: Int)?
    /// One sender per app sample stream, by stream id, and the one of a URL played here.
    private(set) var streamSenders: [String: A2DPSender] = [:]
    private(set) var urlSender: A2DPSender?
    /// Senders told to stop whose threads may still write: the socket stays open until they end.
    private var endingSenders = 0
    var playback: LocalPlayback?

    /// The level last set here and what it became on the 0-127 scale, so `volume` reads back what
    /// the person set rather than its rounding (also before BlueZ confirms it).
    private var lastSet: (level: Float, raw: UInt16)?
    private var levelBeforeMute: UInt16?

    init(device: MediaOutputDevice, session: MediaOutputSession, path: DBusObjectPath, blueZ: BlueZConnection) {
        self.device = device
        self.session = session
        self.path = path
        self.blueZ = blueZ
    }

    var configuration: SBCConfiguration? { transport.flatMap { blueZ.endpoint.transports[$0]?.configuration } }
    private var rawVolume: UInt16? { transport.flatMap { blueZ.objects.transports[$0]?.volume } }
    /// The device's rendering delay as BlueZ reports it (A2DP delay reporting), in seconds.
    var deviceDelay: Double? { transport.flatMap { blueZ.objects.transports[$0]?.delay }.map { Double($0) / 10_000 } }

    /// Audio frames in one A2DP packet at this transport's MTU (bluetoothd's usual 895 bytes
    /// until the transport is acquired).
    var samplesPerPacket: Int {
        guard let configuration else { return 0 }
        let settings = configuration.encoderSettings
        let packetizer = try? A2DPPacketizer(frameBytes: settings.frameBytes, samplesPerFrame: settings.samplesPerFrame, writeMTU: socket?.writeMTU ?? 895)
        return packetizer?.samplesPerPacket ?? 0
    }

    // MARK: Transport

    /// Acquires the transport if it is not yet: the socket A2DP media packets go to.
    func acquire() async throws(MediaDeviceError) -> (fd: Int32, writeMTU: Int, configuration: SBCConfiguration) {
        guard let transport, let configuration else {
            throw MediaDeviceError(.sessionFailed, "\(device.displayName) has no audio link: it is not connected")
        }
        if let socket { return (socket.fd, socket.writeMTU, configuration) }
        let reply: [DBusValue]
        do {
            reply = try await blueZ.call(transport, BlueZ.mediaTransport, "Acquire")
        } catch {
            throw MediaDeviceError(.sessionFailed, "\(device.displayName) refused its audio link: \(error)")
        }
        guard reply.count == 3, let fd = reply[0].fileDescriptor?.take(), let writeMTU = reply[2].uint16 else {
            throw MediaDeviceError(.sessionFailed, "BlueZ answered Acquire for \(device.displayName) without a socket and MTU")
        }
        if let socket {  // acquired by a concurrent call meanwhile
            close(fd)
            return (socket.fd, socket.writeMTU, configuration)
        }
        socket = (fd, Int(writeMTU))
        return (fd, Int(writeMTU), configuration)
    }

    /// Gives the transport back once nothing plays (and no sender's thread can still write to it).
    func releaseIfIdle() {
        guard streamSenders.isEmpty, urlSender == nil, endingSenders == 0, let socket else { return }
        self.socket = nil
        close(socket.fd)
        if let transport { Task { try? await blueZ.call(transport, BlueZ.mediaTransport, "Release") } }
    }

    func add(_ sender: A2DPSender, stream: String) { streamSenders[stream] = sender }

    func removeSender(stream: String) {
        if let sender = streamSenders.removeValue(forKey: stream) { retire(sender) }
        releaseIfIdle()
    }

    func setURLSender(_ sender: A2DPSender?) {
        if let old = urlSender { retire(old) }
        urlSender = sender
        if sender == nil { releaseIfIdle() }
    }

    /// Stops a sender; the transport may be released once its thread has ended.
    private func retire(_ sender: A2DPSender) {
        sender.stop()
        endingSenders += 1
        Task {
            _ = await sender.ending
            self.endingSenders -= 1
            self.releaseIfIdle()
        }
    }

    /// Stops everything and gives the transport back (deactivation, or the device went away).
    func shutDown() {
        for sender in streamSenders.values { retire(sender) }
        streamSenders = [:]
        playback?.player.stop()
        playback = nil
        setURLSender(nil)
        releaseIfIdle()
    }

    // MARK: SampleOutput

    var isPaused = false {
        didSet { urlSender.map { isPaused ? $0.pause() : $0.resume() } }
    }

    /// Nothing to drop: the sink holds no more than the sender's lead (10 ms) beyond its own buffer.
    func sourceJumped(to position: Double) {}

    var volume: Float {
        get {
            if let lastSet { return lastSet.level }
            return rawVolume.map { Float($0) / 127 } ?? 1
        }
        set {
            let level = min(max(newValue, 0), 1)
            let raw = UInt16((level * 127).rounded())
            lastSet = (level, raw)
            levelBeforeMute = nil
            write(raw)
        }
    }

    /// A2DP has no mute: muting sets the level to 0 and remembers the one before.
    var isMuted: Bool {
        get { levelBeforeMute != nil && rawVolume == 0 }
        set {
            if newValue, !isMuted {
                levelBeforeMute = rawVolume ?? 0
                write(0)
            } else if !newValue, let level = levelBeforeMute {
                levelBeforeMute = nil
                write(level)
            }
        }
    }

    /// The device's level as BlueZ reports it: another level than the one set here means the
    /// person changed it on the device, so what was set here no longer holds.
    func deviceReported(volume raw: UInt16) {
        if let lastSet, lastSet.raw != raw { self.lastSet = nil }
    }

    /// One step of `volume.change`: 5 % of the range (IPC/README.md §11.2).
    func changeVolume(by steps: Int) {
        volume = volume + Float(steps) * 0.05
    }

    private func write(_ raw: UInt16) {
        guard let transport else { return }
        Task {
            do {
                try await blueZ.setProperty("Volume", of: BlueZ.mediaTransport, at: transport, to: .uint16(raw))
            } catch {
                log("cannot set the volume of \(device.displayName): \(error)")
            }
        }
    }
}
