import DACP
import MediaDevice
import MediaRouteIPC
import PCMPlayback
import RAOP

/// One activated AirPlay receiver: its RAOP session, opened at activation and held until
/// deactivation (as AirPlay senders do: playing then starts without a handshake, and a password
/// is checked when the person is there to retype it), what feeds it (an app's samples or a URL
/// played here), and its volume.
///
/// What changes the stream (play, stop, pause, resume, close) is carried out one change after the
/// other, in the order asked: each waits for the stream to stop before another reads the source.
@MainActor
final class ActiveReceiver: SampleOutput {
    let device: MediaOutputDevice
    let session: MediaOutputSession
    let sender: RAOPSender
    private let memory: ReceiverMemory
    /// A URL played here, if that is what plays.
    private(set) var playback: LocalPlayback?
    /// What feeds the stream, and the app stream it comes from (nil: the URL); whether it streams.
    private var source: (any PCMSource)?
    private(set) var streamID: String?
    private var streaming = false
    /// The stream running, watched for its failure (each stream by its own watcher).
    private var stream: RAOPStream?
    /// Seeks asked so far: a pause asked before a seek must not rewind from the new position.
    private var jumps = 0
    private var changes: Task<Void, Never>?
    private var volumeChange: Task<Void, Never>?
    /// Where the receiver's own remote control reaches us.
    var remote: DACPServer?
    /// Told when sending failed (the receiver went away or refused the audio), with the reason.
    var failed: (String) -> Void = { _ in }

    init(device: MediaOutputDevice, session: MediaOutputSession, sender: RAOPSender, memory: ReceiverMemory) {
        self.device = device
        self.session = session
        self.sender = sender
        self.memory = memory
    }

    /// Refusals of its remote already logged: shairport-sync asks `getproperty` every few seconds
    /// (a 400 tells it this remote is a plain one), and the log says so once, not each time.
    private var refusalsLogged: Set<String> = []

    func remoteRefused(_ refusal: DACPError) {
        guard refusalsLogged.count < 32, refusalsLogged.insert(refusal.message).inserted else { return }
        log("\(device.displayName)'s remote: refused \(refusal)")
    }

    /// Ends the route through `failed` if the receiver closes the session's connection (switched
    /// off, restarted, crashed) or stops answering, whether or not anything plays.
    func watchConnection() {
        Task { [sender, weak self] in
            guard let lost = await sender.connectionLost(), let self else { return }
            failed(lost.code == .timedOut ? "\(device.displayName) stopped answering: \(lost.message)"
                                          : "\(device.displayName) closed its connection: it was switched off or restarted")
        }
    }

    /// A new source plays at once: what paused the last one does not hold for it (a URL's
    /// `LocalPlayback` reads this when it is made, before `play`).
    func prepareToPlay() { paused = false }

    /// Plays `source` from now on, in place of what played (a URL's `playback` with it). Not
    /// paused from now: a pause asked after this call holds for it.
    func play(_ source: any PCMSource, stream: String?, playback: LocalPlayback? = nil) async {
        paused = false
        await enqueue {
            await self.stopStreaming()
            if let old = self.playback, old !== playback { old.player.stop() }
            self.source = source
            self.streamID = stream
            self.playback = playback
            await self.startStreaming()
        }.value
    }

    /// Stops what plays (the receiver drops what it buffered); the session stays.
    func stopPlaying() async {
        await enqueue {
            await self.stopStreaming()
            self.source = nil
            self.streamID = nil
            self.playback?.player.stop()
            self.playback = nil
        }.value
    }

    /// Ends the session: nothing plays, the receiver is released.
    func close() async {
        await stopPlaying()
        await remote?.stop()
        await sender.teardown()
    }

    /// Runs `body` after every change asked before it.
    @discardableResult
    private func enqueue(_ body: @escaping @MainActor () async -> Void) -> Task<Void, Never> {
        let previous = changes
        let next = Task { @MainActor in
            await previous?.value
            await body()
        }
        changes = next
        return next
    }

    /// Has the sender's thread read the source from now on; a failure of the stream (the receiver
    /// went away) ends the route through `failed`.
    private func startStreaming() async {
        guard let source, !streaming, !paused else { return }
        do throws(RAOPError) {
            // A receiver sets its volume anew for each stream (shairport-sync starts at its
            // default): the one kept is said again once the audio flows, with where a URL is.
            let stream = try await sender.play(source, onFirstPacket: { Task { @MainActor [weak self] in
                self?.sendVolume()
                self?.sendProgress()
            } })
            self.stream = stream
            Task { [weak self] in
                guard case .failed(let error) = await stream.ended else { return }
                self?.failed("\(self?.device.displayName ?? "the receiver") stopped taking audio: \(error.message)")
            }
        } catch {
            return failed("\(device.displayName) cannot take audio: \(error.message)")
        }
        streaming = true
    }

    /// Stops the stream, waits until nothing is being sent, and has the receiver drop what it
    /// holds. Returns how much of what was sent the receiver had not played.
    @discardableResult
    private func stopStreaming() async -> Duration {
        guard streaming else { return .zero }
        streaming = false
        stream = nil
        await sender.stopStreaming()
        let unplayed = await sender.unplayed
        try? await sender.flush()
        return unplayed
    }

    // MARK: SampleOutput

    private var paused = false

    /// Paused: the stream stops (the source waits where it is) and the receiver drops its buffer; a
    /// URL goes back by what the receiver held and had not played, so resuming skips nothing.
    var isPaused: Bool {
        get { paused }
        set {
            guard newValue != paused else { return }
            paused = newValue
            let jumpsAsked = jumps
            enqueue {
                if newValue, self.playback?.state == .ended {
                    // The end of a URL: the stream sends the last of it, and the receiver plays out
                    // the ~2 s it holds (a FLUSH would cut every track's end).
                    await self.finishStreaming()
                } else if newValue {
                    let unplayed = await self.stopStreaming()
                    // Not after a seek asked since the pause: the position is the one sought.
                    if let player = self.playback?.player, unplayed > .zero, self.jumps == jumpsAsked {
                        player.seek(to: max(0, player.position - unplayed.seconds))
                    }
                } else {
                    await self.startStreaming()
                }
            }
        }
    }

    /// Where a URL is, for the receiver's display: at its start, and again after each pause and seek.
    private func sendProgress() {
        guard let player = playback?.player, let duration = player.duration, duration > 0 else { return }
        Task { [sender, device, position = player.position] in
            do { try await sender.setProgress(position: .seconds(min(position, duration)), duration: .seconds(duration)) } catch {
                log("\(device.displayName): the position was not shown: \(error)")
            }
        }
    }

    /// A seek: the receiver drops the ~2 s it holds from before it (FLUSH), and the stream starts
    /// again from the position sought (sought again: what the stream read from it before the
    /// FLUSH went with it).
    func sourceJumped(to position: Double) {
        jumps += 1
        enqueue {
            guard self.streaming else { return }
            await self.stopStreaming()
            self.playback?.player.seek(to: position)
            await self.startStreaming()
        }
    }

    /// Lets the stream end by itself (its source ended) without dropping what the receiver holds.
    private func finishStreaming() async {
        guard streaming else { return }
        streaming = false
        stream = nil
        _ = await sender.streamEnded()
    }

    /// The receiver's volume, remembered for its next activation.
    var volume: Float {
        get { memory[device.id].volume ?? 1 }
        set {
            memory[device.id].volume = min(max(newValue, 0), 1)
            sendVolume()
        }
    }

    var isMuted: Bool {
        get { memory[device.id].muted ?? false }
        set {
            memory[device.id].muted = newValue
            sendVolume()
        }
    }

    /// The receiver changed its volume itself (its knob, its remote): taken as it is, not sent back.
    func receiverSet(decibels: Double) {
        var entry = memory[device.id]
        entry.muted = decibels <= DACPCommand.mutedDB
        if decibels > DACPCommand.mutedDB { entry.volume = Float(min(max((decibels + 30) / 30, 0), 1)) }
        memory[device.id] = entry
    }

    /// AirPlay's scale is −30 dB (quietest) to 0 dB, and −144 for silence: 0 and mute are silence,
    /// the rest is spread evenly in dB.
    static func decibels(volume: Float, muted: Bool) -> Double {
        muted || volume <= 0 ? -144 : -30 + 30 * Double(volume)
    }

    /// Sends the remembered volume (at activation, and after each change), one change after
    /// the other so the last one set is the last one the receiver hears.
    func sendVolume() {
        let level = Self.decibels(volume: volume, muted: isMuted)
        let previous = volumeChange
        volumeChange = Task { [sender, device] in
            await previous?.value
            do { try await sender.setVolume(dB: level) } catch { log("\(device.displayName): the volume was not set: \(error)") }
        }
    }
}
