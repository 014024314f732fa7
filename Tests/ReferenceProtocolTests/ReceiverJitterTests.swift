import Foundation
import MediaCodecs
@testable import MediaRouteIPC
import PrivateDaemons
import ReferenceProtocol
import Synchronization
import Testing
import TestSupport

/// The real receiver behind a bad network: a controller written from PROTOCOL.md sends four
/// seconds of Opus at real-time pace through the tests' own UDP relay (delays up to 50 ms, so
/// reordering, and one packet in 30 dropped), the receiver plays to a private PulseAudio's null
/// sink, and the sink's monitor must carry the tone without a gap; `status` reports the playout.
@Suite("Reference receiver: sound behind a jittery, lossy network", .serialized, .timeLimit(.minutes(2)))
struct ReceiverJitterTests {
    @Test func theToneComesOutWithoutGapsAndStatusReportsThePlayout() async throws {
        let root = NSTemporaryDirectory() + "mediaroute-jitter-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let pulse = try await PrivatePulseAudio()
        var avahi: PrivateAvahi?, receiver: ReceiverProcess?, relay: JitterRelay?
        try await withTearDown {
            avahi = try await PrivateAvahi()
            let recording = try await pulse.record(to: root + "/heard.wav")
            receiver = try ReceiverProcess(name: "Far TV", avahi: avahi!, root: root, arguments: ["--auth", "none", "--audio-output", "pulse"],
                                           environment: pulse.environment)
            let tv = receiver!
            try await tv.waitUntilAnnounced()
            let fd = try await TCPSocket.connect(host: "127.0.0.1", port: try #require(tv.port), timeout: .seconds(3))
            let link = try await Connection.open(socket: fd, hello: Hello(role: .controller, name: "test", identity: ["controllerId": .string("jitter-test")]),
                                                 side: .initiator(acceptingRoles: [.receiver]), configuration: ConnectionConfiguration(label: "receiver"),
                                                 handlers: RPCHandlers())
            let started = try await link.request(ReferenceRequest.StreamStart.method,
                                                 ["stream": "s", "kind": "audio", "codec": "opus", "sampleRate": 48_000, "channels": 2]).result
            let port = UInt16(try #require(started.objectValue?["port"]?.integerValue))
            relay = try JitterRelay(to: port, network: .init(maximumDelay: .milliseconds(50), dropEvery: 30))
            let sender = try UDPSocket.connect(host: "127.0.0.1", port: relay!.port)
            defer { close(sender) }

            // Four seconds of 440 Hz at half of full scale, a 20 ms packet every 20 ms, from a thread of its
            // own paced by the monotonic clock (a task on the shared pool would be late while the suite runs).
            let sent = Atomic<Int>(0)
            let sending = Task {
                try await onThreadOfItsOwn {
                    let encoder = try OpusRTPEncoder(OpusEncoder.Settings(), sampleType: .float32, payloadType: ReferenceProtocol.opusPayloadType)
                    var due = timespec()
                    clock_gettime(CLOCK_MONOTONIC, &due)
                    for index in 0..<200 {
                        let samples = (0..<960).flatMap { frame -> [Float] in
                            let value = Float(0.5 * sin(2 * Double.pi * 440 * Double(index * 960 + frame) / 48_000))
                            return [value, value]
                        }
                        _ = try samples.withUnsafeBytes { try encoder.add($0) { _ = UDPSocket.send(sender, $0) } }
                        sent.store(index + 1, ordering: .relaxed)
                        due.tv_nsec += 20_000_000
                        if due.tv_nsec >= 1_000_000_000 { due.tv_sec += 1; due.tv_nsec -= 1_000_000_000 }
                        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &due, nil) == EINTR {}
                    }
                }
            }
            try await waitUntil("3.5 s sent") { sent.load(ordering: .relaxed) >= 175 }
            let status = try await link.request(ReferenceRequest.Status.method, [:]).result
            try await sending.value
            relay!.stop()
            let counts = relay!.relayed
            relay = nil

            // The protocol's status, in the middle of the stream: how it plays out.
            let stream = try #require(status.objectValue?["streams"]?.arrayValue?.first?.objectValue, "\(status)")
            #expect(stream["stream"] == "s")
            let target = try #require(stream["targetMilliseconds"]?.integerValue), lost = try #require(stream["lost"]?.integerValue)
            let underruns = try #require(stream["underruns"]?.integerValue)
            #expect(target >= 50, "it grew for the jitter: \(stream)")
            #expect(lost >= 1 && lost <= counts.dropped, "what the relay dropped was concealed: \(stream), relay \(counts)")
            #expect(underruns <= 5, "\(stream)")

            let summary = try await link.request(ReferenceRequest.StreamStop.method, ["stream": "s"]).result
            #expect(summary.objectValue?["packets"]?.integerValue == Int64(counts.relayed), "\(summary), relay \(counts)")
            try await tv.waitFor("stream s ended: ")
            await pulse.finish(recording)
            await link.close()

            let heard = try HeardTone(wav: root + "/heard.wav")
            print("behind the relay (\(counts)): \(heard); \(tv.console.lastLine(startingWith: "stream s ended: ") ?? "")"
                  + tv.output.split(separator: "\n").filter { $0.contains("stalled") }.map { "\n  " + $0 }.joined())
            // No gap longer than concealment bridges: every loss and every late packet was concealed. A
            // block or two may be quiet (concealment fades over losses in a row; the sound server can run
            // dry for a moment while the whole suite loads this machine: the ended line says so).
            #expect(heard.longestGap <= 100, "no gap longer than concealment bridges (100 ms): \(heard)")
            // All of it but what came while PulseAudio started the device (0.1-0.35 s, skipped).
            #expect(heard.seconds > 3.6 && heard.seconds < 4.1, "\(heard)")
            // The pitch read over blocks with concealed ones among them: within a few percent.
            #expect(abs(heard.frequency - 440) < 12, "\(heard)")
            // At the receiver's volume, 0.5: a quarter of full scale.
            #expect(abs(heard.peak - 0.25) < 0.05, "\(heard)")
        } tearDown: {
            relay?.stop()
            await receiver?.stop()
            await avahi?.stop()
            await pulse.stop()
        }
    }
}
