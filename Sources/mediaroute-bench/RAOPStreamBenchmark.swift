import CBenchBaseline
import Foundation
import Glibc
import MediaRouteIPC
import PrivateDaemons
import RAOP

/// `raop-stream`: the CPU it takes to stream audio to one AirPlay receiver (a real shairport-sync),
/// encrypted as AirPort Express and Apple TVs require, per minute of audio: `RAOPSender` fed in
/// 100 ms pieces, as an app's ring hands them over, against a C loop doing the same framing,
/// encryption (OpenSSL), RTP and pacing in the same run. PipeWire's RAOP sink would be the other
/// natural baseline; it needs a PipeWire daemon, which this machine does not run. Also: how long
/// after the first packet the receiver plays, beside the buffering the protocol itself asks for.
struct RAOPStreamBenchmark {
    let seconds: Int

    func run() async throws {
        let frames = seconds * 44_100
        var pcm = [Int16](repeating: 0, count: frames * 2)
        for i in 0..<frames {
            let value = Int16(16_000 * sin(2 * Double.pi * 441 * Double(i) / 44_100))
            (pcm[2 * i], pcm[2 * i + 1]) = (value, value)
        }
        print("raop-stream: \(seconds) s of 44.1 kHz stereo, encrypted, each side in real time")

        let key = (0..<16).map { UInt8($0) }, iv = (0..<16).map { UInt8(255 - $0) }
        let (sink, port) = try UDPSocket.bind(host: "127.0.0.1")  // nobody reads it
        defer { close(sink) }
        let baseline = try await onThreadOfItsOwn { [pcm] in
            pcm.withUnsafeBufferPointer { cbb_raop_stream($0.baseAddress, frames, key, iv, Int32(port)) }
        }
        guard baseline > 0 else { throw BenchmarkError("the C RAOP loop failed") }

        let receiver = try await PrivateAirPlayReceiver.start(name: "Bench Speaker")
        let sender = RAOPSender(configuration: RAOPSenderConfiguration(host: receiver.host, port: receiver.port, encrypted: true))
        let (ours, firstAudio): (Double, Duration?)
        do {
            try await sender.start()
            let streaming = Task {
                let piece = 4_410 * 2
                for start in stride(from: 0, to: pcm.count, by: piece) {
                    try await sender.send(pcm: Array(pcm[start..<min(pcm.count, start + piece)]))
                }
                try await sender.finish()
            }
            // The CPU is counted once the first audio was seen: looking for it is the bench's work.
            let heard = try await Self.firstAudio(at: receiver)
            let (before, since) = (Self.processCPU(), ContinuousClock.now)
            try await streaming.value
            ours = Double(Self.processCPU() - before) / (ContinuousClock.now - since).seconds * Double(seconds)
            let sent = await sender.firstPacketSent
            firstAudio = heard.flatMap { at in sent.map { at - $0 } }
        } catch {
            await sender.teardown()
            await receiver.stop()
            throw error
        }
        let audioLatency = await sender.audioLatency
        await sender.teardown()
        await receiver.stop()

        let perMinute = { (nanoseconds: Double) in nanoseconds / 1e9 * 60 / Double(seconds) }
        print("  raw C loop (ALAC framing, OpenSSL AES-128-CBC, RTP, sendto, clock_nanosleep): \(format(perMinute(Double(baseline)), digits: 3)) CPU s per minute of audio")
        print("  RAOPSender to shairport-sync (the whole process): \(format(perMinute(ours), digits: 3)) CPU s per minute of audio")
        let buffering = Double(RAOPSenderConfiguration(host: "").latencyFrames + UInt32(audioLatency ?? 0)) / 44_100
        print("  first packet to first audio at the receiver: \(firstAudio.map { format($0.seconds, digits: 3) + " s" } ?? "not seen"), "
            + "the protocol's own buffering \(format(buffering, digits: 3)) s (latency \(RAOPSenderConfiguration(host: "").latencyFrames) frames + Audio-Latency \(audioLatency ?? 0))")
        printResult("raop-stream", ratio: ours / Double(baseline), target: 1.0)
    }

    /// When a sample above silence first reaches the receiver's output.
    private static func firstAudio(at receiver: PrivateAirPlayReceiver) async throws -> ContinuousClock.Instant? {
        let deadline = ContinuousClock.now + .seconds(10)
        var checked = receiver.audioBytes
        while ContinuousClock.now < deadline {
            let output = receiver.audio(from: checked)
            if output.contains(where: { abs(Int($0)) > 1_000 }) { return .now }
            checked += output.count * 2
            try await Task.sleep(for: .milliseconds(2))
        }
        return nil
    }

    /// User and system CPU of the whole process, in nanoseconds.
    private static func processCPU() -> UInt64 {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let micros = (Int(usage.ru_utime.tv_sec) + Int(usage.ru_stime.tv_sec)) * 1_000_000 + Int(usage.ru_utime.tv_usec) + Int(usage.ru_stime.tv_usec)
        return UInt64(micros) * 1_000
    }
}
