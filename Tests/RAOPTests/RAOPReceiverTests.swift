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

    /// Streams `stream` in one session and returns the audio the receiver played during it.
    func play(_ stream: ToneStream, to receiver: PrivateAirPlayReceiver, encrypted: Bool = false, password: String? = nil,
              volume: Double? = nil) async throws -> (audio: [Int16], sender: RAOPSender) {
        let offset = receiver.audioBytes
        let sender = RAOPSender(configuration: RAOPSenderConfiguration(host: receiver.host, port: receiver.port, password: password, encrypted: encrypted))
        try await withTearDown {
            try await sender.start()
            if let volume { try await sender.setVolume(dB: volume) }
            try await stream.send(with: sender)
        } tearDown: {
            await sender.teardown()
        }
        return (receiver.audio(from: offset), sender)
    }

    func report(_ label: String, _ stream: ToneStream, _ audio: [Int16], _ sender: RAOPSender) async -> Double {
        let (snr, onset, played) = stream.measure(audio)
        let latency = await sender.audioLatency
        let counters = sender.counters
        let peak = audio.map { abs(Int($0)) }.max() ?? 0
        print("RAOP \(label): peak \(peak), SNR \(String(format: "%.1f", snr)) dB, tone onset at frame \(onset.map(String.init) ?? "none") of \(played) played, Audio-Latency \(latency.map(String.init) ?? "none"), timing answers \(counters.timingAnswers), resent \(counters.resent), missed \(counters.missed)")
        return snr
    }

    @Test(.timeLimit(.minutes(1))) func unencryptedStreamPlaysTheToneLosslessly() async throws {
        try await withReceiver { receiver in
            let stream = ToneStream()
            let (audio, sender) = try await play(stream, to: receiver, volume: 0)
            let snr = await report("unencrypted", stream, audio, sender)
            #expect(snr >= 40, "SNR \(snr) dB; receiver log:\n\(receiver.log.suffix(3000))")
            #expect(await sender.audioLatency == 11025)
            #expect(sender.counters.timingAnswers > 0)
        }
    }

    @Test(.timeLimit(.minutes(1))) func encryptedStreamPlaysTheToneLosslessly() async throws {
        try await withReceiver { receiver in
            let stream = ToneStream()
            let (audio, sender) = try await play(stream, to: receiver, encrypted: true, volume: 0)
            let snr = await report("encrypted", stream, audio, sender)
            #expect(snr >= 40, "SNR \(snr) dB; receiver log:\n\(receiver.log.suffix(3000))")
        }
    }

    @Test(.timeLimit(.minutes(1))) func passwordReceiverPlaysWithTheRightPasswordAndRefusesAWrongOne() async throws {
        try await withReceiver(password: "open sesame") { receiver in
            let wrong = RAOPSender(configuration: RAOPSenderConfiguration(host: receiver.host, port: receiver.port, password: "guess"))
            do throws(RAOPError) {
                try await wrong.start()
                Issue.record("a wrong password was accepted")
            } catch {
                #expect(error.code == .authorizationFailed, "\(error)")
            }
            await wrong.teardown()
            let none = RAOPSender(configuration: RAOPSenderConfiguration(host: receiver.host, port: receiver.port))
            do throws(RAOPError) {
                try await none.start()
                Issue.record("a receiver with a password accepted a session without one")
            } catch {
                #expect(error.code == .authorizationRequired, "\(error)")
            }
            await none.teardown()
            let stream = ToneStream(toneSeconds: 2)
            let (audio, sender) = try await play(stream, to: receiver, password: "open sesame", volume: 0)
            let snr = await report("password", stream, audio, sender)
            #expect(snr >= 40, "SNR \(snr) dB; receiver log:\n\(receiver.log.suffix(3000))")
        }
    }

    @Test(.timeLimit(.minutes(1))) func volumeMinus15dBReachesThePipeLevel() async throws {
        try await withReceiver { receiver in
            let stream = ToneStream(toneSeconds: 2)
            let (full, _) = try await play(stream, to: receiver, volume: 0)
            let (quiet, _) = try await play(stream, to: receiver, volume: -15)
            let ratio = stream.level(quiet) / stream.level(full)
            print("RAOP volume: level at 0 dB \(stream.level(full)), at -15 dB \(stream.level(quiet)), ratio \(ratio) (expected 0.178)")
            #expect(stream.level(full) > 0.3)
            #expect(abs(ratio - 0.178) < 0.02, "ratio \(ratio); receiver log:\n\(receiver.log.suffix(3000))")
        }
    }
}
