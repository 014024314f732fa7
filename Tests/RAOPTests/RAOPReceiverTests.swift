import Foundation
import PrivateDaemons
import RAOP
import Testing

/// The sender against a real AirPlay 1 receiver, shairport-sync, with its audio written to a file:
/// what it plays is read back and compared with what was sent. Needs root (the receiver's private
/// Avahi daemon runs in a network namespace).
@Suite(.serialized) struct RAOPReceiverTests {
    /// Starts a receiver, runs `body`, and stops the receiver (and its Avahi, namespace and files) whatever happens.
    func withReceiver<T>(password: String? = nil, _ body: (PrivateAirPlayReceiver) async throws -> T) async throws -> T {
        let receiver = try await PrivateAirPlayReceiver.start(password: password)
        return try await withTearDown { try await body(receiver) } tearDown: { await receiver.stop() }
    }

    /// Streams `stream` in one session and returns the audio the receiver played during it, at
    /// `volume` (dB) once it flows: `prepare` runs before the stream, `at` before each piece (with the seconds sent), and
    /// `finished` after the last while the session is still up.
    func play(_ stream: ToneStream, to receiver: PrivateAirPlayReceiver, encrypted: Bool = false, password: String? = nil,
              volume: Double? = nil, prepare: (RAOPSender) async throws -> Void = { _ in },
              at: (RAOPSender, Double) async throws -> Void = { _, _ in },
              finished: (RAOPSender) async throws -> Void = { _ in }) async throws -> (audio: [Int16], sender: RAOPSender) {
        let offset = receiver.audioBytes
        let sender = RAOPSender(configuration: RAOPSenderConfiguration(host: receiver.host, port: receiver.port, password: password, encrypted: encrypted))
        try await withTearDown {
            try await sender.start()
            try await prepare(sender)
            // The volume once audio flows, as a driver sets it: shairport-sync starts each stream
            // at its own default, and one set just before may land before or after that.
            var volumeSet = volume == nil
            try await stream.send(with: sender) { sent in
                if !volumeSet, sent > 0, let volume {
                    volumeSet = true
                    try await sender.setVolume(dB: volume)
                }
                try await at(sender, sent)
            }
            try await finished(sender)
        } tearDown: {
            await sender.teardown()
        }
        return (receiver.audio(from: offset), sender)
    }

    /// The error starting a session with `password` ends in (nil, recorded as an issue, if it starts).
    func startError(_ receiver: PrivateAirPlayReceiver, password: String?) async -> RAOPError? {
        let sender = RAOPSender(configuration: RAOPSenderConfiguration(host: receiver.host, port: receiver.port, password: password))
        do throws(RAOPError) {
            try await sender.start()
            await sender.teardown()
            Issue.record("a session with password \(password ?? "none") started on a receiver whose password is \(receiver.password ?? "none")")
            return nil
        } catch {
            return error
        }
    }

    func report(_ label: String, _ stream: ToneStream, _ audio: [Int16], _ sender: RAOPSender) async -> Double {
        let (snr, onset, played) = stream.measure(audio)
        let latency = await sender.audioLatency
        let counters = sender.counters
        let wait = await sender.timingWait
        let peak = audio.map { abs(Int($0)) }.max() ?? 0
        print("RAOP \(label): peak \(peak), SNR \(String(format: "%.1f", snr)) dB, tone onset at frame \(onset.map(String.init) ?? "none") of \(played) played, Audio-Latency \(latency.map(String.init) ?? "none"), first timing request \(wait.map { "\($0)" } ?? "none") after RECORD, timing answers \(counters.timingAnswers), resent \(counters.resent), missed \(counters.missed)")
        return snr
    }

    /// Reports the stream and expects all of the tone, from its first sample (the sender's own
    /// lead-in took the receiver's loss), played once and losslessly (SNR ≥ 40 dB).
    func expectWholeTone(_ label: String, _ stream: ToneStream, _ audio: [Int16], _ sender: RAOPSender, _ receiver: PrivateAirPlayReceiver) async {
        let snr = await report(label, stream, audio, sender)
        #expect(snr >= 40, "\(label): SNR \(snr) dB; receiver log:\n\(receiver.log.suffix(3000))")
        let segments = stream.segments(in: audio)
        #expect(segments.count == 1 && abs((segments.first?.length ?? 0) - stream.tone.count) <= 200,
                "\(label): tone runs \(segments) for a tone of \(stream.tone.count) frames")
    }

    @Test(.timeLimit(.minutes(1))) func unencryptedStreamPlaysTheToneLosslessly() async throws {
        try await withReceiver { receiver in
            let stream = ToneStream()
            let (audio, sender) = try await play(stream, to: receiver, volume: 0)
            await expectWholeTone("unencrypted", stream, audio, sender, receiver)
            #expect(await sender.leadInPacketsSent == 32)
            #expect(await sender.audioLatency == 11025)
            #expect(sender.counters.timingAnswers > 0)
        }
    }

    @Test(.timeLimit(.minutes(1))) func encryptedStreamPlaysTheToneLosslessly() async throws {
        try await withReceiver { receiver in
            let stream = ToneStream()
            let (audio, sender) = try await play(stream, to: receiver, encrypted: true, volume: 0)
            await expectWholeTone("encrypted", stream, audio, sender, receiver)
        }
    }

    @Test(.timeLimit(.minutes(1))) func passwordReceiverPlaysWithTheRightPasswordAndRefusesAWrongOne() async throws {
        try await withReceiver(password: "open sesame") { receiver in
            #expect(await startError(receiver, password: "guess")?.code == .authorizationFailed)
            #expect(await startError(receiver, password: nil)?.code == .authorizationRequired)
            let stream = ToneStream(toneSeconds: 2)
            let (audio, sender) = try await play(stream, to: receiver, password: "open sesame", volume: 0)
            await expectWholeTone("password", stream, audio, sender, receiver)
        }
    }

    /// A driver plays one receiver over time: a second session (a new sender, after the first one's
    /// TEARDOWN) to the same running receiver plays as well as the first.
    @Test(.timeLimit(.minutes(1))) func secondSessionToTheSameReceiverPlaysTheTone() async throws {
        try await withReceiver { receiver in
            for index in 1...2 {
                let stream = ToneStream(toneSeconds: 2)
                let (audio, sender) = try await play(stream, to: receiver, volume: 0)
                await expectWholeTone("session \(index)", stream, audio, sender, receiver)
            }
        }
    }

    /// Pause and resume within a session: FLUSH drops what the receiver holds (about 2 s), so of
    /// the 2.5 s of tone sent before it only the first part plays; after a 1 s pause the rest of the
    /// tone plays whole (led by the sender's silence), continuing the tone where the flush cut it.
    @Test(.timeLimit(.minutes(1))) func flushPausesAndTheResumedToneIsPlayedWhole() async throws {
        try await withReceiver { receiver in
            let stream = ToneStream(toneSeconds: 5)
            let pauseAt = 2.5
            let (audio, sender) = try await play(stream, to: receiver, volume: 0, at: { sender, sent in
                guard sent == pauseAt else { return }
                try await sender.flush()
                // The pause itself (a listener's 1 s), not a wait for anything: the next send resumes.
                try await Task.sleep(for: .seconds(1))
            })
            let segments = stream.segments(in: audio)
            let resumedFrames = stream.tone.count - Int(pauseAt * Double(ToneStream.sampleRate))
            let resumed = segments.last.map { stream.snr(audio, from: $0.start, toneFrame: Int(pauseAt * Double(ToneStream.sampleRate))) } ?? -.infinity
            print("RAOP pause/resume: tone runs \(segments) (frames), resumed run SNR \(String(format: "%.1f", resumed)) dB, \(resumedFrames) frames sent after the resume, lead-in packets \(await sender.leadInPacketsSent)")
            #expect(segments.count == 2, "tone runs \(segments); receiver log:\n\(receiver.log.suffix(3000))")
            guard segments.count == 2 else { return }
            #expect(segments[0].length < Int(pauseAt * Double(ToneStream.sampleRate)) - ToneStream.sampleRate, "the flush did not stop what was buffered")
            #expect(abs(segments[1].length - resumedFrames) <= 200)
            #expect(resumed >= 40)
            #expect(await sender.leadInPacketsSent == 64)
        }
    }

    /// Progress and metadata as a driver sends them at a track's start and as it plays: the receiver
    /// answers each with 200 (an error otherwise), the stream plays on unharmed, and the title,
    /// artist and album reach its MPRIS `Metadata` (shairport-sync's metadata hub feeds it whether
    /// or not its metadata pipe is enabled), read while the session is still up.
    @Test(.timeLimit(.minutes(1))) func progressAndMetadataAreAcceptedAndTheTitleReachesMPRIS() async throws {
        try await withReceiver { receiver in
            let stream = ToneStream(toneSeconds: 2)
            let (audio, sender) = try await play(stream, to: receiver, volume: 0, prepare: { sender in
                try await sender.setMetadata(title: "Tone à 441 Hz", artist: "MediaRoute", album: "Tests")
                try await sender.setProgress(position: .zero, duration: .seconds(5))
            }, at: { sender, sent in
                // Asked together, as a driver's volume and progress tasks do: the sender sends them
                // one after the other (pipelined, shairport-sync loses the session).
                if sent == 1 {
                    async let progress: Void = sender.setProgress(position: .seconds(1), duration: .seconds(5))
                    async let volume: Void = sender.setVolume(dB: 0)
                    async let title: Void = sender.setMetadata(title: "Tone à 441 Hz", artist: "MediaRoute", album: "Tests")
                    _ = try await (progress, volume, title)
                }
            }, finished: { _ in
                let mpris = try await CapturedCommand.run("/usr/bin/busctl", ["--address=\(receiver.busAddress)", "get-property", "org.mpris.MediaPlayer2.ShairportSync",
                                                                              "/org/mpris/MediaPlayer2", "org.mpris.MediaPlayer2.Player", "Metadata"], timeout: .seconds(5))
                // busctl writes the title's UTF-8 "à" (C3 A0) as octal escapes.
                print("RAOP metadata: MPRIS Metadata \(mpris.output.trimmingCharacters(in: .whitespacesAndNewlines))")
                #expect(mpris.succeeded && mpris.output.contains(#""xesam:title" s "Tone \303\240 441 Hz""#) && mpris.output.contains("\"MediaRoute\"")
                        && mpris.output.contains("\"xesam:album\" s \"Tests\""), "MPRIS: \(mpris.output)")
            })
            await expectWholeTone("metadata", stream, audio, sender, receiver)
        }
    }

    /// The volume changes mid-stream, from 0 to −15 dB: the receiver applies it as it plays (about
    /// 2 s behind what was sent), so the tone's level is read well before and well after the change.
    @Test(.timeLimit(.minutes(1))) func volumeMinus15dBReachesThePipeLevel() async throws {
        try await withReceiver { receiver in
            let stream = ToneStream(toneSeconds: 6)
            var changed = false
            let (audio, _) = try await play(stream, to: receiver, volume: 0, at: { sender, sent in
                if sent >= 3.5, !changed {
                    changed = true
                    try await sender.setVolume(dB: -15)
                }
            })
            let full = stream.level(audio, from: 0.2, seconds: 0.8), quiet = stream.level(audio, from: 4.5, seconds: 1)
            let ratio = quiet / full
            print("RAOP volume: tone level at 0 dB \(full), at -15 dB \(quiet), ratio \(ratio) (-15 dB is 0.178)")
            #expect(full > 0.34)
            #expect(abs(ratio - 0.178) < 0.01, "ratio \(ratio); receiver log:\n\(receiver.log.suffix(3000))")
        }
    }
}
